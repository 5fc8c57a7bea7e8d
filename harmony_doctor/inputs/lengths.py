"""How long one token stream may be: a completion is at most gpt-oss's context window, and a
longer list is refused before it is parsed and replayed, whose memory grows with it (issue 34:
a list of 6.7 million ids took 1.9 GB in `explain`)."""

from __future__ import annotations

import re
from itertools import islice
from typing import Final

from harmony_doctor.errors import InputError
from harmony_doctor.models import TokenInput

# The most token ids one completion holds: gpt-oss's context window (both models).
MAX_COMPLETION_TOKENS: Final = 131_072


_ONLY_IDS = re.compile(r"[\d,\s\[\]()-]*")
_DIGITS = re.compile(r"\d+")


def refuse_long_lists(text: str) -> None:
    """A plain list of ids longer than one completion is refused before it is parsed (a list
    of 6.7 million ids took 440 MB to parse and be refused)."""
    if len(text) > 2 * MAX_COMPLETION_TOKENS and _ONLY_IDS.fullmatch(text):
        found = sum(1 for _ in islice(_DIGITS.finditer(text), MAX_COMPLETION_TOKENS + 1))
        if found > MAX_COMPLETION_TOKENS:
            raise InputError(_TOO_LONG.format(f"more than {MAX_COMPLETION_TOKENS:,}"))


def one_completion(inp: TokenInput) -> TokenInput:
    """`inp`, when it can be one completion; else InputError saying why it is not judged."""
    if len(inp.tokens) <= MAX_COMPLETION_TOKENS:
        return inp
    raise InputError(_TOO_LONG.format(f"{len(inp.tokens):,}"))


_TOO_LONG = (
    f"{{}} token ids in one stream: more than a gpt-oss context holds ({MAX_COMPLETION_TOKENS:,}), "
    "so no one completion; explain judges a completion: cut the input to the one that failed"
)
