"""The server a paste names, from all of its evidence together: paths, loggers, products."""

from __future__ import annotations

import re
from bisect import bisect_left
from collections import Counter
from dataclasses import replace
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
    """One finding per failure a paste shows several times: a summary line, its traceback's
    raise, the client's echo and the HTTP error that carried it, in any order and at any
    distance. Two sightings are one failure when they report the same code and the same
    message (one a copy of the other, maybe cut or wrapped) and nothing of their places says
    otherwise: another process, or another time."""
    kept: list[LogError] = []
    for error in errors:
        same = next((k for k in kept if _one_failure(k, error)), None)
        if same is None:
            kept.append(error)
            continue
        index = kept.index(same)
        kept[index] = _merged(same, error)
    return tuple(sorted(kept, key=_line))


_SPACE: Final = Pattern(r"\s+")
# A quote's closing mark and the sentence that goes on after it (`...header`. The model ...`):
# the words after it are the writer's, not the message's.
_QUOTE_CLOSED: Final = Pattern(r"[`\u201d](?=[\s.,;:)]|$).*", re.S)


def _core(message: str) -> str:
    return _SPACE.sub("", _QUOTE_CLOSED.sub("", message)).lower().rstrip(".'\")")


def _one_failure(a: LogError, b: LogError) -> bool:
    if a.code != b.code or a.kind in ("markup_leak", "stripped_markup"):
        return False
    if a.pid is not None and b.pid is not None and a.pid != b.pid:
        return False
    if a.timestamp and b.timestamp and a.timestamp != b.timestamp:
        return False
    first, second = _core(a.message), _core(b.message)
    return bool(first and second) and (first in second or second in first)


def _merged(kept: LogError, other: LogError) -> LogError:
    """The sighting the server wrote (it carries the most), with what the other adds."""
    main, extra = (kept, other) if _weight(kept) >= _weight(other) else (other, kept)
    return with_facts(main, extra)


def _weight(error: LogError) -> tuple[int, int]:
    """What a sighting says of its failure: its server's facts, then how much of the message."""
    facts = sum(x is not None for x in (error.server, error.timestamp, error.pid))
    facts += error.harmony_version is not None
    return facts, len(error.message)


def _line(error: LogError) -> int:
    return error.line
