"""An error message being read, as the extractor (logs/extract.py) sees it: the candidate that
may continue on the next lines, whether a line could close it, and what its line says around
it (a request id; a mention of the error rather than a record of it)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from harmony_doctor.lazy_regex import Pattern
from harmony_doctor.logs.lines import Line
from harmony_doctor.logs.messages import MessageHit

# Request ids a line may name: OpenAI-style ids, `request_id=...`, SGLang's `rid=...`.
REQUEST_ID = Pattern(
    r"\b(?:chatcmpl|cmpl|resp|req)[-_][0-9A-Za-z][\w-]*|\b(?:request_id|rid)=[\"']?([\w-]+)"
)


@dataclass
class Candidate:
    """An error line being read: it may continue on the next lines."""

    line: Line
    text: str
    last_line: int
    hit: MessageHit
    continued: int = 0
    lead: Line | None = None  # a prefix-only line just before (LM Studio's timestamp line)
    stale: bool = False  # text grew since `hit` was read
    offset: int = 0  # where in `text` to look for the message (a second one on a line)
    # the fallback's hit (faults/generic.py): held open one line, which may show a known form
    # a terminal wrap broke across the two
    provisional: bool = False


def reread(candidate: Candidate, find_hit: Callable[[str, int], MessageHit | None]) -> None:
    hit = find_hit(candidate.text, candidate.offset)
    if hit is not None:  # always: the text still starts with the same message
        candidate.hit = hit
    candidate.stale = False


def may_close(hit: MessageHit, text: str) -> bool:
    """Whether `text` could end the open message: its closing quote, `]` or `)`."""
    if hit.quote is not None:
        return hit.quote in text
    remainder = hit.remainder
    if remainder is not None and remainder.form == "list":
        return "]" in text
    if remainder is not None and remainder.form == "some":
        return ")" in text
    return True


def request_id_of(text: str) -> str | None:
    """The request id a line names around its message (never in it: that is model text)."""
    found = REQUEST_ID.search(text)
    return None if found is None else found.group(1) or found.group(0)


# pytest's short test summary: `FAILED tests/x.py::test_y[param] - <the error>`, a line a
# session ends with for a test whose failure its FAILURES section showed above.
_TEST_SUMMARY = Pattern(r"(?:FAILED|ERROR) \S+(?:\[[^\]\n]*\])? - ")


def is_mention(hit: MessageHit, text: str) -> bool:
    """A line naming a failure rather than recording it:
    - `...remaining in message header` with nothing after it: openai-harmony always writes the
      words, so this is someone naming the error (an issue's title, a sentence);
    - pytest's short summary line, which quotes the error its test raised (alone, with
      `--tb=no`, it is the only sighting, and counts one)."""
    remainder = hit.remainder
    if hit.name == "leftover" and remainder is not None and remainder.form == "absent":
        return True
    summary = _TEST_SUMMARY.match(text)
    return summary is not None and summary.end() <= hit.start
