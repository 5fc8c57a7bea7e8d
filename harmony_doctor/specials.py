"""Harmony's structural special tokens as text is written out (`<|channel|>`), named once.

The catalogue's forms, the paste and prose readers, the log extractor, the token sniffer and
the renderer all look for these same seven in text; each takes the regex from here (a source
string, so the catalogue can put it inside its forms' patterns, which Rust compiles too). A
reader that wants fewer says which it leaves out, and why, where it does. Imports nothing of
the package: every layer may use it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

HEADER_NAMES: Final = ("start", "channel", "constrain", "message")  # open and go on a header
STOP_NAMES: Final = ("end", "return", "call")  # end a message
NAMES: Final = HEADER_NAMES + STOP_NAMES


def written(names: Iterable[str]) -> str:
    """A regex (source) of the special tokens `names` as text: `<\\|(?:end|call)\\|>`."""
    return r"<\|(?:" + "|".join(names) + r")\|>"


ANY: Final = written(NAMES)
HEADER: Final = written(HEADER_NAMES)
STOP: Final = written(STOP_NAMES)
