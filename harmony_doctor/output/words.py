"""Numbers as every output states them, said once: counts in words ("1 request",
"2 requests") and ratios to a fixed precision in JSON and CSV."""

from __future__ import annotations

import math
from typing import Any

# Shares and rates in JSON and CSV carry this many significant digits: computed from counts,
# a ratio never prints as `0.15000000000000002`, nor with more digits than it means.
SIGNIFICANT_DIGITS = 6

# Nouns whose plural is not the noun and an `s`.
_PLURALS = {"process": "processes"}


def counted(count: int, noun: str) -> str:
    """`count` and `noun`, singular for exactly one, with thousands separated."""
    return f"{count:,} {noun if count == 1 else _PLURALS.get(noun, noun + 's')}"


def stated(value: Any) -> Any:
    """A value as JSON and CSV state it: a float rounded to SIGNIFICANT_DIGITS, dicts, lists
    and tuples walked through (a tuple becomes a list), everything else as it is."""
    if isinstance(value, float):
        return float(f"{value:.{SIGNIFICANT_DIGITS}g}") if math.isfinite(value) else value
    if isinstance(value, dict):
        return {k: stated(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [stated(v) for v in value]
    return value
