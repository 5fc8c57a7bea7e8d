render --date 2026-11-30 -
