"""Which server and which openai-harmony release a log line or traceback frame points to."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Final

from harmony_doctor.lazy_regex import Pattern
from harmony_doctor.models import Server

_PACKAGE_SERVERS: dict[str, Server] = {
    "vllm": "vllm",
    "sglang": "sglang",
    "lmdeploy": "lmdeploy",
    "exo": "exo",
    "tensorrt_llm": "tensorrt-llm",
    "llama_stack": "llama-stack",
}
# SGLang's stamp with its parallel rank, `[2026-11-01 10:00:00 TP0] `, at a line's start
_SGLANG_STAMP = r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d (?:TP|DP|PP|EP)\d"
_STARTS_SGLANG = Pattern(_SGLANG_STAMP)
# A logger's file tag vLLM writes (`[serving_chat.py:1001]`); SGLang's files have the same
# names, so the tag alone is vLLM's only where nothing else in the text names a server.
_FILE_TAG = r"\[(?:serving_chat|serving|serving_responses|api_server)\.py:\d+\]"
_SHARED = Pattern(_FILE_TAG)
_LINE_SERVERS: tuple[tuple[Server, Pattern[str]], ...] = (
    ("vllm", Pattern(r"\((?:APIServer|EngineCore\w*|VllmWorker\w*|Worker\w*)\b[^()]*pid=\d+")),
    ("vllm", Pattern(r"\bvllm\.(?:entrypoints|engine|v1|parser)\b|\bvllm serve\b")),
    ("vllm", Pattern(_FILE_TAG)),
    ("sglang", Pattern(r"\bsglang\b|^" + _SGLANG_STAMP)),
    ("lmdeploy", Pattern(r" - lmdeploy - |\blmdeploy\b|\[TM\]\[")),
    ("tensorrt-llm", Pattern(r"tensorrt_llm|TensorRT-LLM|\btrtllm\b|\[TRT-LLM\]", re.I)),
    ("llama-stack", Pattern(r"llama[_-]stack", re.I)),
    ("ollama", Pattern(r"\bollama\[\d+\]|\bsource=[\w./-]+\.go:\d+|\bollama\b", re.I)),
    ("lmstudio", Pattern(r"\bLM ?Studio\b|\blmstudio\b", re.I)),
    ("llama.cpp", Pattern(r"\bllama[-_]server\b|\bllama\.cpp\b|\bcommon_chat_parse", re.I)),
    # llama-server's records: `srv    operator(): `, `srv  log_server_r: `, `slot launch_slot_: `
    ("llama.cpp", Pattern(r"^\s*(?:srv|slot)\s+[\w()]+:\s")),
    # llama-server's error wrapper (`got exception: {"code":500,...`), and minja, the Jinja
    # engine llama.cpp runs templates with, placing its errors `at row N, column M:`
    ("llama.cpp", Pattern(r"\bgot exception: \{\s*\\?\"code\\?\"|\bat row \d+, column \d+:")),
    ("groq", Pattern(r"\bGroqException\b|\bgroq\.\w+Error\b|\bapi\.groq\.com\b")),
)


def _group(index: int) -> str:
    """The name of the group of `_ANY_SERVER` that holds shape `index`."""
    return f"s{index}"


_ANY_SERVER = Pattern(
    "|".join(
        f"(?P<{_group(index)}>{'(?i:' if regex.flags & re.I else '(?:'}{regex.pattern}))"
        for index, (_, regex) in enumerate(_LINE_SERVERS)
    )
)

_GROUP_SERVERS: dict[str, Server] = {
    _group(index): server for index, (server, _) in enumerate(_LINE_SERVERS)
}


def server_shapes() -> tuple[Pattern[str], list[tuple[str, Server]]]:
    """The shapes' one regular expression, and per shape the name of its group and its server
    (the first group that matches names the server, as `text_server_reference` reads it)."""
    return _ANY_SERVER, list(_GROUP_SERVERS.items())


# A word each of the shapes above holds, lowercased, but SGLang's stamp at a text's start: an
# ASCII text that holds none names a server only by that stamp, and the shapes' one regular
# expression, which costs about 0.1 ms on a long line, need not be searched.
_SERVER_WORDS = (
    "pid=",
    "vllm",
    ".py:",
    "sglang",
    "lmdeploy",
    "[tm][",
    "tensorrt",
    "trtllm",
    "trt-llm",
    "llama",
    "ollama",
    "source=",
    "studio",
    "common_chat_parse",
    "srv",
    "slot",
    "got exception",
    "at row",
    "groq",
)


def text_server(line: str) -> Server | None:
    """The server a line's words name (its process tag, module path, source file), or None."""
    if line.isascii():
        lowered = line.lower()  # ASCII: as the shapes' `(?i:...)` read it
        if not any(word in lowered for word in _SERVER_WORDS):
            return "sglang" if _STARTS_SGLANG.match(line) else None
    return text_server_reference(line)


def text_server_reference(line: str) -> Server | None:
    """`text_server` without the words that rule a text out first (tested equal to it)."""
    match = _ANY_SERVER.search(line)
    if match is None or match.lastgroup is None:
        return None
    return _GROUP_SERVERS[match.lastgroup]


_PACKAGE_IN_PATH = Pattern(
    r"[/\\](" + "|".join(map(re.escape, _PACKAGE_SERVERS)) + r")[/\\][\w/\\]*\.py\b"
)


def server_in(text: str) -> Server | None:
    """The server a stretch of log names: by a line's words first, else by a source path."""
    named = text_server(text)
    if named is not None:
        return named
    path = _PACKAGE_IN_PATH.search(text)
    return _PACKAGE_SERVERS[path.group(1)] if path is not None else None


@lru_cache(maxsize=1024)  # a traceback names the same few files again and again
def path_server(path: str) -> Server | None:
    """The server whose installed package holds the file at `path`, or None."""
    parts = re.split(r"[/\\]+", path.strip())
    for index, part in enumerate(parts[:-1]):
        if part in ("site-packages", "dist-packages") and parts[index + 1] in _PACKAGE_SERVERS:
            return _PACKAGE_SERVERS[parts[index + 1]]
    return next((_PACKAGE_SERVERS[p] for p in parts[:-1] if p in _PACKAGE_SERVERS), None)


# --- openai-harmony releases -----------------------------------------------------------------

# Releases 0.0.1 .. 0.0.4 as 1 .. 4, everything from 0.0.5 on as 5 (harmony-facts.md §3).
_ALL_VERSIONS: Final = frozenset({1, 2, 3, 4, 5})
_INIT_LINES: dict[str, dict[int, frozenset[int]]] = {
    "process": {612: frozenset({1, 2}), 627: frozenset({3, 4}), 637: frozenset({5})},
    "parse_messages_from_completion_tokens": {
        510: frozenset({1, 2}),
        525: frozenset({3, 4}),
        529: frozenset({5}),
    },
    "load_harmony_encoding": {
        670: frozenset({1}),
        674: frozenset({2}),
        689: frozenset({3, 4}),
        699: frozenset({5}),
    },
}
_HARMONY_INIT = Pattern(r"harmony[/\\]+_*init_*\.py$")


def frame_versions(path: str, line: int, func: str | None) -> frozenset[int] | None:
    """The releases whose openai_harmony/__init__.py has `func` at `line`, or None."""
    if not _HARMONY_INIT.search(path.strip()):
        return None
    tables = [_INIT_LINES[func]] if func in _INIT_LINES else list(_INIT_LINES.values())
    for table in tables:
        if line in table:
            return table[line]
    return None


def version_label(versions: frozenset[int] | None) -> str | None:
    """`0.0.3-0.0.4`, `>=0.0.5` ... for a set of releases; None when nothing narrows it."""
    if not versions or versions == _ALL_VERSIONS:
        return None
    if versions == {5}:
        return ">=0.0.5"
    low, high = min(versions), max(versions)
    if high == 5:
        return f">=0.0.{low}"
    return f"0.0.{low}" if low == high else f"0.0.{low}-0.0.{high}"


def raise_server(named: Server | None, frames: Server | None, line: str) -> Server | None:
    """The server of a traceback's raise: the one its frames' paths name (`sglang/srt/...`),
    over one taken from the wording of the form that read the raise or from a file tag several
    servers write (`named`); a server the raise's `line` names by its own words stays."""
    if frames is None or named == frames or not names_no_server_itself(line):
        return named
    return frames


def names_no_server_itself(line: str) -> bool:
    """Whether `line` names no server by its own words (its server came from the wording of
    the form that read it, or from a file tag several servers write)."""
    return text_server(_SHARED.sub(" ", line)) is None
