"""The rich styles every view shares, so one meaning always looks the same."""

from __future__ import annotations

SPECIAL = "bold magenta"
ESCAPED = "bold red"
ERROR = "bold red"
WARNING = "bold yellow"
OK = "bold green"
DIM = "dim"
LABEL = "bold"
HEADER_SPAN = "on grey19"
