"""The server a paste names, from all of its evidence together: paths, loggers, products."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace
from typing import TYPE_CHECKING, Final

from harmony_doctor.logs.servers import path_server

if TYPE_CHECKING:
    from harmony_doctor.models import LogError, Server

# A source file of an installed package, as a traceback frame or a logger names it.
_PATH: Final = re.compile(r"""(?:File\s+["']|[\s"'(])(?P<path>(?:[\w.~-]*[/\\])+[\w.-]+\.py)\b""")
# What only one server writes: its logger or module names, its process tags, its products.
_OWN: Final[tuple[tuple[Server, re.Pattern[str]], ...]] = (
    (
        "vllm",
        re.compile(r"\((?:APIServer|EngineCore\w*|VllmWorker\w*) pid=\d+\)|\bvllm[./]|\bvLLM\b"),
    ),
    ("sglang", re.compile(r"\bsglang[./]|\bSGLang\b|\bsgl[-_]")),
    ("tensorrt-llm", re.compile(r"tensorrt_llm[./]|\[TRT-LLM\]|\bTensorRT-LLM\b")),
    ("lmdeploy", re.compile(r"\blmdeploy[./]|\bLMDeploy\b")),
    ("llama.cpp", re.compile(r"\bllama-server\b|\bllama\.cpp\b|\bcommon/chat\.cpp\b")),
    ("ollama", re.compile(r"\bollama\b|harmonyparser\.go", re.I)),
)


def servers_named(text: str) -> Counter[Server]:
    """How often each server's own evidence shows in `text`: package paths and own names."""
    named: Counter[Server] = Counter()
    for match in _PATH.finditer(text):
        server = path_server(match["path"])
        if server is not None:
            named[server] += 1
    for server, own in _OWN:
        count = len(own.findall(text))
        if count:
            named[server] += count
    return named


def attribute(errors: tuple[LogError, ...], text: str) -> tuple[LogError, ...]:
    """The failures with the server the whole paste names, where a line named another one
    that nothing else in the paste shows (SGLang's `[serving_chat.py:N]` read as vLLM's)."""
    if not any(e.server for e in errors):
        return errors
    named = servers_named(text)
    if not named:
        return errors
    ranked = named.most_common(2)
    leader, count = ranked[0]
    if len(ranked) > 1 and ranked[1][1] == count:
        return errors  # no one server the evidence names above the others
    return tuple(
        replace(e, server=leader) if e.server is not None and named[e.server] == 0 else e
        for e in errors
    )
