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


# The most token ids one input may hold in all, however many lists it holds: eight contexts.
# Parsing costs about 55 bytes an id (a 4.4-million-id input took 235 MB before a stream was
# chosen), so this keeps a plain list input under 60 MB while a file of many completions can
# still be read and one chosen with --request.
MAX_INPUT_TOKENS: Final = 8 * MAX_COMPLETION_TOKENS

_ONLY_IDS = re.compile(r"[\d,\s\[\]()-]*")
_DIGITS = re.compile(r"\d+")
_ONE_LIST = re.compile(r"[^\[(]+")  # what lies between two list openings


def refuse_long_lists(text: str) -> None:
    """Plain lists of ids are refused before they are parsed when one of them is longer than a
    completion, or all of them together longer than MAX_INPUT_TOKENS (a list of 6.7 million ids
    took 440 MB to parse and be refused)."""
    if len(text) <= 2 * MAX_COMPLETION_TOKENS or not _ONLY_IDS.fullmatch(text):
        return
    total = 0
    for part in _ONE_LIST.finditer(text):
        ids = _DIGITS.finditer(text, part.start(), part.end())
        found = sum(1 for _ in islice(ids, MAX_COMPLETION_TOKENS + 1))
        if found > MAX_COMPLETION_TOKENS:
            raise InputError(_TOO_LONG.format(f"more than {MAX_COMPLETION_TOKENS:,}"))
        total += found
        if total > MAX_INPUT_TOKENS:
            raise InputError(_TOO_MANY)


def one_completion(inp: TokenInput) -> TokenInput:
    """`inp`, when it can be one completion; else InputError saying why it is not judged."""
    if len(inp.tokens) <= MAX_COMPLETION_TOKENS:
        return inp
    raise InputError(_TOO_LONG.format(f"{len(inp.tokens):,}"))


_TOO_LONG = (
    f"{{}} token ids in one stream: more than a gpt-oss context holds ({MAX_COMPLETION_TOKENS:,}), "
    "so no one completion: cut the input to the completion you want read"
)
_TOO_MANY = (
    f"more than {MAX_INPUT_TOKENS:,} token ids in the input, eight times what a gpt-oss context "
    "holds: cut the input to the completions you want read"
)
