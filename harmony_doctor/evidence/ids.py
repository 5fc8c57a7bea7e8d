"""Token ids wherever a paste prints them: runs of integers under any key or none, judged by
what they are in `o200k_harmony` before anything is replayed.

An engine prints the ids it parsed in its own words: `output_ids=[...]`, `gen tokens: 200005
35644 ...`, a tensor, a debug line with no key at all. A run is read as ids when it holds
Harmony's special tokens among ordinary ones; a list of ports, sizes or dimensions holds none
and stays quiet, and so does a loader's or a config's list of special tokens alone (a stop
list). Its key says its role: a prompt's ids are replayed as messages left open, anything else
as a completion (cut short where a person elided its end).
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Final

from harmony_doctor.inputs.paste import LISTS_SPECIALS, harmony_run
from harmony_doctor.lazy_regex import Pattern

# A run of at least four integers, comma- or space-separated, maybe in brackets over lines
# (possessive: a run of millions of ids keeps no backtracking stack, which took 400 MB).
_BRACKETED: Final = Pattern(
    r"[\[(]\s*(\d{1,9}(?:\s*,\s*\d{1,9}|\s+\d{1,9}){3,}+)\s*,?\s*(\.\.\.|…)?"
)
# A key is tried once per run of word characters (at its first letter, after any digits, dots
# or dashes): from any later letter of the run it would fail the same way, and trying each made
# a line of 6 MB of letters quadratic (more than 15 minutes).
_KEYED: Final = Pattern(
    r"(?<![\w.-])(?:(?![A-Za-z_])[\w.-])*+(?P<key>[A-Za-z_][\w.-]*+)[\"']?\s*[:=]\s*"
    r"(?P<ids>\d{1,9}(?:[ \t]*,[ \t]*\d{1,9}|[ \t]+\d{1,9}){3,}+)"
    r"[ \t]*,?[ \t]*(?P<more>\.\.\.|…)?"
)
_KEY_BEFORE: Final = Pattern(r"(?P<key>[A-Za-z_][\w.-]*)[\"']?\s*(?:[:=]|\bis\b)?\s*(?:tensor\()?$")
_PROMPT_KEY: Final = Pattern(r"prompt|input|request|context|history", re.I)


@dataclass(frozen=True)
class IdRun:
    """A run of token ids a paste prints: where, its key (None: none), and whether a person
    elided its end (`...`)."""

    line: int
    ids: tuple[int, ...]
    key: str | None
    elided: bool

    @property
    def prompt(self) -> bool:
        """Its key names a prompt: messages rendered for the model, not what it wrote."""
        return self.key is not None and _PROMPT_KEY.search(self.key) is not None

    @property
    def text(self) -> str:
        """The run as an id list the token reader takes."""
        return "[" + ", ".join(map(str, self.ids)) + "]"


def id_runs(text: str) -> Iterator[IdRun]:
    """The runs of token ids in `text` that hold Harmony's special tokens, in order, once each,
    as they are read: a line's runs are held until the next line's, never the whole paste's (a
    paste of 200,000 id runs held them all, with a set of every one seen)."""
    lines = _Lines(text)
    held: list[_Found] = []
    place = (0, 0, 0)
    for found in heapq.merge(_bracketed(text), _keyed(text)):
        at = lines.at(found[0])
        if at[0] != place[0]:
            yield from _kept(held, text, place)
            held, place = [], at
        held.append(found)
    yield from _kept(held, text, place)


# A run as a pass finds it: where its ids start, the pass (0 bracketed, 1 keyed: the bracketed
# reading of a line's ids is kept before a keyed one of the same ids), the digits, its key,
# and whether its end was elided.
_Found = tuple[int, int, str, str | None, bool]


def _bracketed(text: str) -> Iterator[_Found]:
    for match in _BRACKETED.finditer(text):
        start = match.start()
        key = _KEY_BEFORE.search(text, text.rfind("\n", 0, start) + 1, start)
        yield start, 0, match.group(1), key["key"] if key else None, match.group(2) is not None


def _keyed(text: str) -> Iterator[_Found]:
    for match in _KEYED.finditer(text):
        yield match.start("ids"), 1, match["ids"], match["key"], match["more"] is not None


def _kept(held: list[_Found], text: str, place: tuple[int, int, int]) -> list[IdRun]:
    """The runs of one line (`place`: its number, start and end) worth replaying, in order: not a
    tokenizer's or a loader's listing of its special tokens, each list of ids once."""
    number, line_start, line_end = place
    line = text[line_start:line_end]
    runs: dict[int, IdRun] = {}
    seen: set[tuple[int, ...]] = set()
    for start, _, digits, key, elided in sorted(held, key=lambda found: found[1]):
        if LISTS_SPECIALS.search(line) or (key is not None and LISTS_SPECIALS.search(key)):
            continue
        ids = tuple(int(d) for d in re.findall(r"\d+", digits))
        if not harmony_run(ids, 4) or ids in seen:
            continue
        seen.add(ids)
        runs[start] = IdRun(number, ids, key, elided)
    return [runs[start] for start in sorted(runs)]


class _Lines:
    """Where a position of `text` lies, asked in increasing order: (line number, line start,
    line end), counted on from the last position asked, so a pass over a paste with many runs
    reads it once (counting from the top for each run was quadratic)."""

    __slots__ = ("_end", "_number", "_position", "_start", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self._position = 0
        self._number = 1
        self._start = 0
        self._end = -1  # the end of the line at `_position`, once looked for

    def at(self, index: int) -> tuple[int, int, int]:
        text = self.text
        if index < self._position:
            raise ValueError("positions are asked for in increasing order")
        newlines = text.count("\n", self._position, index)
        if newlines:
            self._number += newlines
            self._start = text.rfind("\n", self._position, index) + 1
            self._end = -1
        self._position = index
        if self._end < index:
            end = text.find("\n", index)
            self._end = len(text) if end < 0 else end
        return self._number, self._start, self._end


# Code that renders a conversation for completion, then hands that same variable to the
# completion parser: the prompt parsed as if the model wrote it (openai/harmony#33).
_RENDERED: Final = Pattern(r"(?P<name>\w+)\s*=\s*[\w.]*render_conversation_for_completion\(")
_PARSED: Final = Pattern(r"parse_messages_from_completion_tokens\(\s*(?P<name>\w+)\s*[,)]")


def parses_its_prompt(text: str, callers: Callable[[], frozenset[int]], start: int) -> bool:
    """Whether a paste shows a rendered prompt handed to the completion parser: code parsing
    the variable it rendered for completion, or an id run opening with a header of a message
    a caller writes (`<|start|>system`, `developer`, `user`: `callers()` are their ids, asked
    only for a run that opens with <|start|>), which no completion does (a model writes from
    the assistant's header on)."""
    rendered = {m["name"] for m in _RENDERED.finditer(text)}
    if rendered and any(m["name"] in rendered for m in _PARSED.finditer(text)):
        return True
    opened = [run.ids[1] for run in id_runs(text) if run.ids[0] == start and len(run.ids) > 1]
    return bool(opened) and not callers().isdisjoint(opened)
