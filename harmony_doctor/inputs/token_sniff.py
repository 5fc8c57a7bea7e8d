"""What an input holds, told without reading it as tokens: whether its bytes may hold a token
stream at all (`may_hold_tokens`), and the shape of its text (`detect_format`).

scan looks at a whole file as explain would (scan/documents.py) only where this says it may:
most inputs are logs, and `inputs/tokens.py`, which reads token streams of every shape, then
never loads; explain learns that a traceback holds no ids without loading it either. What
`may_hold_tokens` checks is a necessary condition of `detect_format` (a property test holds
the two together).
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator
from typing import Any

from harmony_doctor import specials
from harmony_doctor.choices import InputFormat
from harmony_doctor.errors import InputError
from harmony_doctor.inputs import log_words as words
from harmony_doctor.inputs.text_lines import LINE_BREAKS, stripped_bounds
from harmony_doctor.lazy_regex import Pattern

# What `detect_format` needs to find tokens, in bytes: a JSON or SSE start, Harmony markup
# anywhere, or a first line of ids (ASCII whitespace and the separators str.strip() drops).
_TOKEN_START = Pattern(rb"[\[{]|data:")
_ID_LINE = Pattern(rb"[\[\(\]\),\s\x1c-\x1f\x80-\xff\d-]*")  # non-ASCII: detect_format decides
_LEADING = Pattern(rb"[ \t\n\r\x0b\x0c\x1c-\x1f]*")
_MARKUP = Pattern(rb"<\|")  # the regex engine searches 2x faster than `in` here


def may_hold_tokens(data: bytes) -> bool:
    """A cheap necessary condition for `detect_format` to find a token stream in `data` (its
    UTF-8 bytes): False means it finds none, or only a vLLM log's ids. A text that starts with
    a non-ASCII character (a byte-order mark, Unicode spaces) is left to `detect_format`.
    Nothing is copied: it costs a search for `<|` over the data."""
    start = _LEADING.match(data).end()  # type: ignore[union-attr]  # matches the empty string
    if start == len(data):
        return False
    if data[start] >= 0x80 or _TOKEN_START.match(data, start) or _MARKUP.search(data, start):
        return True
    end = data.find(b"\n", start)
    return _ID_LINE.fullmatch(data, start, len(data) if end < 0 else end) is not None


# What a text holds: ids, JSON, Harmony text, a vLLM log's records.
IDS_RE = Pattern(r"[\[\(]?\s*-?\d+(?:\s*[,\s]\s*-?\d+)*+\s*,?\s*[\]\)]?")  # *+: no stack
_SPECIAL_TEXT_RE = Pattern(specials.ANY)
_SPACE = Pattern(r"\s*")
_FIRST_LINE = Pattern(f"[^{LINE_BREAKS}]*")  # the first line as splitlines() cuts it
# A line that logs ids under vLLM's keys (or logs `None` there).
LOG_MARKER = Pattern(r"\b(?:output_token_ids|prompt_token_ids)\s*[:=]\s*(?:\[|None)")
GENERATED_RE = Pattern(  # vLLM's `Generated response <id>[ (streaming delta|complete)]`
    rf"{re.escape(words.VLLM_GENERATED)}(?P<id>[^\s:]+)(?P<mode>{words.either(words.VLLM_MODES)})?"
)
PROMPT_LINE_RE = Pattern(r"(?:Received request|Request) (?P<id>[^\s:]+)")


def has_vllm_record(text: str) -> bool:
    """A line that logs ids the way vLLM does, not only the key (Harmony text may quote it)."""
    from harmony_doctor.inputs.paste import lines_of  # a line at a time: a log is not copied

    return any(
        LOG_MARKER.search(line) and (GENERATED_RE.search(line) or PROMPT_LINE_RE.search(line))
        for part in lines_of(text)
        if "token_ids" in part
        for line in part.splitlines()
        if "token_ids" in line
    )


def detect_format(text: str) -> InputFormat:
    """Guess the shape of `text`; raises InputError when nothing looks like tokens."""
    lo, hi = stripped_bounds(text)  # text.strip(), not copied: a log may be 100 MB
    if IDS_RE.fullmatch(text, lo, hi) and not text.startswith("[", lo):
        return "ids"
    if has_vllm_record(text) and not text.startswith(("{", "[", "<|"), lo):
        return "vllm-log"  # a stream that starts with a special token is Harmony text
    if text.startswith(("{", "["), lo):
        stripped = text[lo:hi]
        try:
            from harmony_doctor.inputs.id_lists import parse_int

            json.loads(stripped, parse_int=parse_int)
            return "json"
        except json.JSONDecodeError:
            pass
        except (ValueError, RecursionError):
            return "json"  # well-formed but unusable: parsing again reports why
        if stripped.startswith("{") or _json_lines(stripped):
            return "jsonl"
        if _looks_like_cut_list(stripped) or IDS_RE.fullmatch(stripped):
            return "ids"
    if text.startswith("data:", lo):
        return "jsonl"
    if _SPECIAL_TEXT_RE.search(text):
        return "text"
    if LOG_MARKER.search(text):
        return "vllm-log"
    first = _FIRST_LINE.match(text, lo).group()[:60]  # type: ignore[union-attr]  # matches ""
    raise InputError(f"no token ids or Harmony text found (line 1 starts {first!r})")


def _json_lines(text: str) -> bool:
    """Two JSON arrays or objects or more, one after the other (a line each, as a script
    dumps id lists, or pretty-printed, as `jq` reads a stream of values)."""
    try:
        docs = list(itertools.islice(json_values(text), 2))
    except InputError:
        return False
    return len(docs) == 2 and all(isinstance(doc, list | dict) for _, doc in docs)


def json_values(text: str) -> Iterator[tuple[int, Any]]:
    """The JSON values of a text, one after the other, each with the line it starts on."""
    from harmony_doctor.inputs.id_lists import parse_int  # ids: read only for a JSON text

    decoder = json.JSONDecoder(parse_int=parse_int)
    position, line, counted = 0, 1, 0
    while True:
        position = _SPACE.match(text, position).end()  # type: ignore[union-attr]
        if position == len(text):
            return
        line += text.count("\n", counted, position)
        counted = position
        try:
            doc, position = decoder.raw_decode(text, position)
        except json.JSONDecodeError as exc:
            raise InputError(
                f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
            ) from None
        except RecursionError:
            raise InputError(f"JSON at line {line} is nested too deeply") from None
        except ValueError as exc:
            raise InputError(f"invalid JSON at line {line}: {exc}") from None
        yield line, doc


def _looks_like_cut_list(text: str) -> bool:
    """`[1, 2, 3` with no closing bracket: a list a log cut short."""
    return bool(re.fullmatch(r"\[\s*-?\d+(?:\s*,\s*-?\d+)*+\s*,?", text))
