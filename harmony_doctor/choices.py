"""The choices the CLI offers, defined once: plain Literal types the core and the CLI share.

Kept apart from models.py (records) so that the command line can declare its options without
building a single record class: `--help` stays fast.
"""

from __future__ import annotations

from typing import Literal

ParseRole = Literal["assistant", "none"]  # where a stream starts: inside a header, or at <|start|>
# "log": a server log, read for the failures it records (and, as token input, the ids it logs).
InputFormat = Literal["auto", "json", "ids", "jsonl", "vllm-log", "text", "log"]
INPUT_FORMATS: tuple[InputFormat, ...] = ("auto", "json", "ids", "jsonl", "vllm-log", "text", "log")
Style = Literal["harmony", "passthrough"]  # how `render` renders a chat
STYLES: tuple[Style, ...] = ("harmony", "passthrough")
Dialect = Literal["lark", "gbnf"]  # grammar languages
ContentType = Literal["json", "constrain"]  # `<|constrain|>json` or ` json`
CONTENT_TYPES: tuple[ContentType, ...] = ("json", "constrain")
Channel = Literal["analysis", "commentary", "final"]
# What scan and report summaries can group by (`--by`), in the order the help lists them.
GROUP_KEYS = (
    "code",
    "kind",
    "pattern",
    "server",
    "harmony_version",
    "origin",
    "file",
    "pid",
    "day",
    "hour",
)
