"""The server a paste names, from all of its evidence together: paths, loggers, products; and
its failures one per failure, as scan counts them."""

from __future__ import annotations

import re
from bisect import bisect_left
from collections import Counter
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Final

from harmony_doctor.lazy_regex import Pattern
from harmony_doctor.logs.servers import names_no_server_itself, path_server
from harmony_doctor.models.core import with_facts

if TYPE_CHECKING:
    from harmony_doctor.models import LogError, Server

# A source file of an installed package, as a traceback frame or a logger names it.
_PATH: Final = Pattern(r"""(?:File\s+["']|[\s"'(])(?P<path>(?:[\w.~-]*[/\\])+[\w.-]+\.py)\b""")
# What only one server writes: its logger or module names, its process tags, its products.
_OWN: Final[tuple[tuple[Server, Pattern[str]], ...]] = (
    (
        "vllm",
        Pattern(
            r"\((?:APIServer|EngineCore\w*|VllmWorker\w*) pid=\d+\)|\bvllm[./]|\bvLLM\b"
            r"|\bvllm\s+serve\b"
        ),
    ),
    ("sglang", Pattern(r"\bsglang[./]|\bSGLang\b|\bsgl[-_]")),
    ("tensorrt-llm", Pattern(r"tensorrt_llm[./]|\[TRT-LLM\]|\bTensorRT-LLM\b")),
    ("lmdeploy", Pattern(r"\blmdeploy[./]|\bLMDeploy\b|\blmdeploy\s+(?:serve|version)\b")),
    ("llama.cpp", Pattern(r"\bllama-server\b|\bllama\.cpp\b|\bcommon/chat\.cpp\b")),
    ("ollama", Pattern(r"\bollama\b|harmonyparser\.go", re.I)),
    ("lmstudio", Pattern(r"\bLM ?Studio\b|\blmstudio\b", re.I)),
    ("groq", Pattern(r"\bGroq(?:Exception)?\b|\bapi\.groq\.com\b")),
)
# How far (in lines) the nearest server a paste of several names may be from a failure that
# names none, to be its server.
_REACH: Final = 6


def servers_named(text: str) -> Counter[Server]:
    """How often each server's own evidence shows in `text`: package paths and own names."""
    return Counter(server for _, server in _mentions(text))


def _mentions(text: str) -> list[tuple[int, Server]]:
    """Each piece of a server's own evidence in `text`: where (its offset) and whose."""
    found: list[tuple[int, Server]] = []
    for match in _PATH.finditer(text):
        server = path_server(match["path"])
        if server is not None:
            found.append((match.start(), server))
    for server, own in _OWN:
        found.extend((match.start(), server) for match in own.finditer(text))
    return found


def attribute(errors: tuple[LogError, ...], text: str) -> tuple[LogError, ...]:
    """The failures with the server the whole paste names, where a line named none, or named
    another one that nothing else in the paste shows (SGLang's `[serving_chat.py:N]` read as
    vLLM's, vLLM's wording of a check SGLang copied under SGLang's frames; an engine's words
    under its own `lmdeploy serve` command line).
    Only a paste whose evidence names one server is read so: a log of several keeps the
    server each line names."""
    if not errors:
        return errors
    mentions = _mentions(text)
    named = Counter(server for _, server in mentions)
    if len(named) > 1:  # a log of many, or a text comparing them: the one named nearest
        lines = _lines_by_server(text, mentions)
        return tuple(_nearest(e, lines) if e.server is None else e for e in errors)
    if not named:
        return errors
    (leader,) = named
    return tuple(
        replace(e, server=leader)
        if e.server is None or (e.server != leader and names_no_server_itself(e.raw))
        else e
        for e in errors
    )


def _lines_by_server(text: str, mentions: list[tuple[int, Server]]) -> dict[Server, list[int]]:
    """The lines (1-based, in order) where each server is named, counted in one pass."""
    lines: dict[Server, list[int]] = {}
    line, at = 1, 0
    for offset, server in sorted(mentions):
        line += text.count("\n", at, offset)
        at = offset
        lines.setdefault(server, []).append(line)
    return lines


def _nearest(error: LogError, lines: dict[Server, list[int]]) -> LogError:
    """A failure that names no server, with the one server named nearest its line (within
    `_REACH` lines, and nearer than any other); else as it was (each line's own word holds)."""
    distance: list[tuple[int, Server]] = []
    for server, where in lines.items():
        index = bisect_left(where, error.line)
        away = [abs(where[i] - error.line) for i in (index - 1, index) if 0 <= i < len(where)]
        distance.append((min(away), server))
    distance.sort(key=lambda item: item[0])
    (near, server), *others = distance
    if near > _REACH or (others and others[0][0] == near):
        return error
    return replace(error, server=server)


def one_per_failure(errors: tuple[LogError, ...]) -> tuple[LogError, ...]:
    """The failures counted as scan counts them, by line: the extractor's (it folds the
    sightings of one failure close together), with each logged summary and the raise of the
    traceback it sums up joined across the lines between (logs/summaries.py, scan's rule). The
    same error shown again otherwise is another failure: the next request failing alike, a
    log pasted twice, a copy in a sentence."""
    from harmony_doctor.logs.summaries import join_sightings

    logged = [(e.line, 0, index, _Sighted(e)) for index, e in enumerate(errors)]
    logged.sort(key=lambda t: t[:3])
    join_sightings(logged, None, None, _joined)
    return tuple(sighted.error for *_, sighted in logged)


@dataclass(frozen=True, slots=True)
class _Sighted:
    """A failure as logs/summaries.py reads a logged error (`Logged`)."""

    error: LogError

    @property
    def line(self) -> int:
        return self.error.line

    @property
    def traceback_line(self) -> int | None:
        start = self.error.span[0]  # the traceback's head, where the error line is its raise
        return start if start < self.error.line else None

    @property
    def code(self) -> str:
        return self.error.code

    @property
    def kind(self) -> str:
        return self.error.kind

    @property
    def token_id(self) -> int | None:
        return self.error.token

    @property
    def pid(self) -> int | None:
        return self.error.pid

    @property
    def request_id(self) -> str | None:
        return None  # a log line's: none read

    @property
    def timestamp(self) -> str | None:
        return self.error.timestamp

    @property
    def message(self) -> str:
        return self.error.message


def _joined(first: _Sighted, later: _Sighted) -> _Sighted:
    """One finding of a failure's two sightings, as scan joins them (scan/findings.py): the
    first's line and words with what the other adds, the server the traceback's frames name
    before the summary's; its evidence from the first line of either to the last."""
    raised, summary = (later, first) if later.traceback_line is not None else (first, later)
    one, other = first.error, later.error
    span = (min(one.span[0], other.span[0]), max(one.span[1], other.span[1]))
    server = raised.error.server or summary.error.server
    return _Sighted(replace(with_facts(one, other), server=server, span=span))
