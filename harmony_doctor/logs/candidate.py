"""An error message being read, as the extractor (logs/extract.py) sees it: the candidate that
may continue on the next lines, whether a line could close it, and what its line says around
it (a request id; a mention of the error rather than a record of it; a caller's words quoting
it)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from harmony_doctor import specials
from harmony_doctor.lazy_regex import Pattern
from harmony_doctor.logs.lines import Line
from harmony_doctor.logs.messages import MessageHit, string_around

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


# pytest's short test summary: `FAILED test_x.py::test_y[param] - <the error>`, a line a
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


# A message a caller wrote, as a request carries it: a rendered prompt's message body, or a chat
# body's content. An error quoted there is someone asking about it, not a server raising it.
_CALLERS: Final = frozenset({"user", "system", "developer", "tool", "function"})
_REACH: Final = 4096  # how far before the error its message's header or role key may sit
# where a message's header opens, where its body starts, where it stops
_MARK = Pattern(r"<\|(" + "|".join(("start", "message", *specials.STOP_NAMES)) + r")\|>")
_HEADER_ROLE = Pattern(r"\s*([\w.-]+)")
# A role key's value (JSON, Python's repr, keyword arguments; quotes maybe escaped).
_ROLE_KEY = Pattern(r"""\\*["']?role\\*["']?\s*[:=]\s*\\*["'](\w+)""")
_CONTENT_KEY = Pattern(r"""\\*["']?(?:content|text)\\*["']?\s*[:=]\s*(?:\[\s*)?$""")


def written_by_caller(text: str, hit: MessageHit) -> bool:
    """Whether the message sits in words a caller wrote in a request: the body of a rendered
    prompt's message from a user, system, developer or tool (`<|start|>user<|message|>...`), or
    the content of a chat message with such a role (`{"role": "user", "content": "..."}`).

    A server's error quoting the model's output quotes an assistant's message, never these."""
    low = max(0, hit.start - _REACH)
    marks = list(_MARK.finditer(text, low, hit.start))
    if marks and marks[-1].group(1) == "message":
        header = next((m for m in reversed(marks) if m.group(1) == "start"), None)
        if header is not None:
            role = _HEADER_ROLE.match(text, header.end(), marks[-1].start())
            word = role.group(1) if role else ""
            return word.lower() in _CALLERS or "." in word  # functions.x: a tool's output
    opened = hit.opened_at
    if opened is not None and hit.quote == "`":
        opened = string_around(text, opened)  # inline code in a message's content
    if opened is None or not _CONTENT_KEY.search(text, max(0, opened - 64), opened):
        return False
    roles = list(_ROLE_KEY.finditer(text, max(0, opened - _REACH), opened))
    return bool(roles) and roles[-1].group(1).lower() in _CALLERS
