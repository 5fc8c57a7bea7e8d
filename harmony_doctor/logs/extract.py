"""Log text -> extracted Harmony failures (LogError): tracebacks, wrappers and bodies of any server.

`extract_errors` reads lines one at a time and keeps a bounded state per process prefix (the
traceback in progress, the last timestamp, an error line still being continued, a few failures
waiting for their duplicates), so `scan` can run it over streams of any length. A failure is
reported once however many times a log repeats it (the traceback's error line, a wrapper, the
JSON body sent to the client), at the 1-based line of its first error line. Nothing here knows
a particular excerpt: prefixes, wrappers and message forms are recognised by shape.
"""

from __future__ import annotations

import html
import re
from collections import OrderedDict, deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Final

from harmony_doctor import rules
from harmony_doctor.classify import HEADER_SHAPE, FaultContext, classify
from harmony_doctor.harmony.vocab import FIRST_SPECIAL, START, special_token_name
from harmony_doctor.models import ErrorKind, Kind, LogError, Server
from harmony_doctor.rules import Rule

# Bounds. Memory: process prefixes remembered, failures waiting for their copies, how long an
# error line may grow by continuation. Distances in lines: how far apart two copies of one
# failure may be (a failure is emitted once this many lines passed without a copy), how long
# a traceback may pause, how close its last line the error line must follow.
MAX_KEYS: Final = 64
MAX_PENDING: Final = 64
MAX_CONTINUATION_LINES: Final = 256
MAX_MESSAGE_CHARS: Final = 65_536
MAX_RAW_CHARS: Final = 4000
MAX_ERRORS_PER_LINE: Final = 16
DUP_WINDOW: Final = 60
TRACEBACK_REACH: Final = 40
TRACEBACK_END: Final = 2
OPENER_REACH: Final = 4096  # characters before a message its opening quote may sit

# --- line anatomy ----------------------------------------------------------------------------

_CLEAN = str.maketrans(
    {
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u201f": '"',
        "\u2033": '"',
        "\u2018": "'",
        "\u2019": "'",
        "\u201a": "'",
        "\u2032": "'",
        "\u00a0": " ",
        "\u200b": None,
        "\u200c": None,
        "\u200d": None,
        "\ufeff": None,
    }
)
# Terminal wrapping pads a broken line with spaces up to the width; a long run of spaces
# between two non-space characters is padding, not text.
_WRAP_PADDING = re.compile(r"(?<=\S) {8,}(?=\S)")
_MARKDOWN = re.compile(r"^\s*(?:>\s?)+|^\s*`+(?:[A-Za-z]+\s*$)?|`+\s*$")

_TS_ISO = r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?"
_TS_MONTH_DAY = r"\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?"
_TS_SYSLOG = r"[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d"
_TS_CLOCK = r"\d\d:\d\d:\d\d(?:[.,]\d+)?"
_LEVEL = r"(?:TRACE|DEBUG|INFO|NOTICE|WARNING|WARN|ERROR|ERR|CRITICAL|FATAL)"

# Process tags: they tell interleaved processes apart.
_KEY_PATTERNS = (
    re.compile(r"^(?P<key>[A-Za-z0-9][\w.-]*[-_]\d+)\s+\|\s?"),  # docker compose `vllm-1  | `
    re.compile(  # journald: `Aug 10 12:00:01 host ollama[812]: `
        rf"^(?P<ts>{_TS_SYSLOG}) \S+ (?P<key>[\w.@/-]+\[(?P<pid>\d+)\]):\s?"
    ),
    re.compile(r"^\((?P<key>[^()]*?\bpid=(?P<pid>\d+)[^()]*)\)\s?"),  # vLLM `(APIServer pid=1)`
)
# Record prefixes: level, time, source, in the shapes servers and logging libraries write.
_RECORD_PATTERNS = (
    # vLLM `ERROR 08-06 23:25:57 [serving_chat.py:1001] `, `ERROR [serving.py:830] `, no `[`
    re.compile(
        rf"^(?P<level>{_LEVEL})\s+(?:(?P<ts>{_TS_MONTH_DAY}|{_TS_ISO})\s+)?"
        r"\[?(?P<src>[\w.-]+\.py:\d+)\]\s?"
    ),
    # lmdeploy `2025-09-15 11:29:27,572 - lmdeploy - ERROR - async_engine.py:657 - `
    re.compile(rf"^(?P<ts>{_TS_ISO}) - (?P<src>[\w.]+) - (?P<level>{_LEVEL}) - (?:[\w.]+:\d+ - )?"),
    # loguru `2025-01-01 12:00:00.123 | ERROR    | module:function:12 - `
    re.compile(rf"^(?P<ts>{_TS_ISO})\s*\|\s*(?P<level>{_LEVEL})\s*\|\s*(?P<src>[\w.<>:-]+)\s+-\s"),
    # loguru `[ ERROR | logging:handle:1681 ] `
    re.compile(rf"^\[\s*(?P<level>{_LEVEL})\s*\|\s*(?P<src>[\w.<>:-]+)\s*\]\s?"),
    # logfmt (Ollama, Go slog) `time=... level=ERROR source=server.go:1 msg=...`: keep msg=
    re.compile(r"^time=(?P<ts>\S+)\s+level=(?P<level>\w+)(?:\s+source=(?P<src>\S+))?\s+(?=msg=)"),
    # `[2025-08-07 21:37:03 TP0] `, `[2025-08-07 21:37:03] ERROR:    `, `[..][ERROR][model] `
    re.compile(
        rf"^\[(?P<ts>{_TS_ISO}|{_TS_MONTH_DAY}|{_TS_CLOCK})(?:\s+(?P<src>[^\]]*))?\]"
        rf"(?:\s*\[(?P<level>{_LEVEL})\])?(?:\[[^\]]*\])*\s*(?:(?P<level2>{_LEVEL}):?\s+)?"
    ),
    # `2025-08-07 21:37:03 ERROR `, `2025-08-07T21:37:03Z [ERROR] `, `ERROR 2025-08-07 ...`
    re.compile(rf"^(?P<ts>{_TS_ISO})\s+\[?(?P<level>{_LEVEL})\]?:?(?:\s+|$)"),
    re.compile(rf"^(?P<level>{_LEVEL})\s+(?P<ts>{_TS_ISO})\s+"),
    # a source tag alone, as pasted from vLLM: `[serving_chat.py:1001] `
    re.compile(r"^\[(?P<src>[\w.-]+\.py:\d+)\]\s?"),
    # Python logging and uvicorn `ERROR:root:`, `ERROR:    `
    re.compile(rf"^(?P<level>{_LEVEL}):(?:[\w.]+:|\s+)"),
    # container runtimes and `kubectl logs --timestamps`: `2025-08-07T21:37:03.1Z stdout F `
    re.compile(rf"^(?P<ts>{_TS_ISO})\s+(?:(?:stdout|stderr)\s+[FP]\s+)?"),
)
_PREFIX_PATTERNS = (*_KEY_PATTERNS, *_RECORD_PATTERNS)
# All prefix shapes in one pattern (named groups made plain), to reject text in one call.
_ANY_PREFIX = re.compile(
    "|".join(f"(?:{re.sub(r'[(][?]P<[a-z0-9]+>', '(?:', p.pattern)})" for p in _PREFIX_PATTERNS)
)
_NEVER_PREFIX = frozenset(" \t|+{\"'<.:-")  # no prefix starts so: spare the patterns
_MONTH_DAY_RECORD = re.compile(rf"^{_LEVEL}\s+{_TS_MONTH_DAY}\s+\[?[\w.-]+\.py:\d+\]")

_GUTTER_SEPARATOR = re.compile(r"^\s*\+-")
_GUTTER_GROUP_HEAD = re.compile(r"^\s*\+ (?=Exception Group Traceback)")
_GUTTER = re.compile(r"^(?:\s*\|(?=\s|$))+")

# Python's, IPython's (`HarmonyError   Traceback (most recent call last)`) and rich's heads.
_TRACEBACK_START = re.compile(
    r"^(?:[\w.]+\s*|[╭┌][─ ]*)?(?:Exception Group )?Traceback \(most recent call last\)"
)
_CHAIN = re.compile(
    r"^(?:During handling of the above exception|The above exception was the direct cause)"
)
_FRAME = re.compile(
    r'^File\s*"(?P<path>[^"]*)"\s*,\s*line\s*(?P<line>\d+)(?:\s*,\s*in\s*(?P<func>[\w<>.]+))?'
)
# Other frame shapes: IPython `File ~/x/__init__.py:529, in f`, rich `│ /x/__init__.py:637 in f`.
_FRAME_SHORT = re.compile(
    r'^(?:File\s+)?(?P<path>[~/\\.\w:-][^\s"│]*\.py):(?P<line>\d+)'
    r"(?:,?\s+in\b\s*(?:\w+\.)*(?P<func>[\w<>]+)?)?"
)
# Lines inside a traceback that are neither frames nor code: IPython arrows and cells, boxes.
_TRACEBACK_FURNITURE = re.compile(r"^(?:-*>\s*\d+\s|\d+\s|Cell In\[\d+\]|[│╭╰┌└├])")
_CARETS = re.compile(r"^[\s^~]*[\^~][\s^~]*$")
_ELISION = re.compile(
    r"^(?:\.{3,}|…+|\[(?:\.\.\.|…|snip|truncated)[^\]]*\]|\((?:\.\.\.|…|snip|truncated)[^)]*\)"
    r"|<snip>|-- ?snip ?--)$",
    re.I,
)


@dataclass(frozen=True)
class _Line:
    """One physical line taken apart: process key, prefix, and the text after them."""

    number: int
    raw: str
    key: str  # the process tag(s) ("(APIServer pid=1)", "ollama[812]"), or ""
    prefix: str  # everything recognised before the text, process tags included
    rest: str  # the text after the prefix, as found (for joining wrapped lines)
    text: str  # rest without exception-group gutters, stripped
    timestamp: str | None
    pid: int | None
    gutter: bool
    evidence: Server | None


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
_HTML_ENTITY = re.compile(r"&(?:quot|apos|lt|gt|amp|#\d+|#x[0-9a-fA-F]+);")


def _clean(raw: str) -> str:
    """The line as its writer meant it: no colours, straight quotes, no paste damage."""
    line = raw.rstrip("\r\n")
    if "\x1b" in line:
        line = _ANSI.sub("", line)
    if "&" in line and _HTML_ENTITY.search(line):
        line = html.unescape(line)
    if not line.isascii():
        line = line.translate(_CLEAN)
    if "        " in line:
        line = _WRAP_PADDING.sub("", line)
    if "`" in line or ">" in line[:3]:
        line = _MARKDOWN.sub("", line)
    return line


def _anatomize(number: int, raw: str) -> _Line:
    line = _clean(raw)
    keys: list[str] = []
    timestamp: str | None = None
    pid: int | None = None
    evidence = _line_server(line)
    position = 0
    if line[:1].isspace():  # an indented paste: the prefix may follow the indentation
        indent = len(line) - len(line.lstrip())
        if _ANY_PREFIX.match(line[indent:]) and not line.startswith("File ", indent):
            position = indent
    for _ in range(4):
        rest = line[position:]
        if not rest or rest[0] in _NEVER_PREFIX or not _ANY_PREFIX.match(rest):
            break
        match = None
        for pattern in _PREFIX_PATTERNS:
            match = pattern.match(rest)
            if match is not None and match.end() > 0:
                break
            match = None
        if match is None:
            break
        if evidence is None and _MONTH_DAY_RECORD.match(rest):
            evidence = "vllm"  # `LEVEL MM-DD HH:MM:SS [file.py:N]` is vLLM's own format
        groups = match.groupdict()
        if groups.get("key"):
            keys.append(groups["key"])
        if timestamp is None and groups.get("ts"):
            timestamp = groups["ts"]
        if pid is None and groups.get("pid"):
            pid = int(groups["pid"])
        position += match.end()
    prefix, rest = line[:position], line[position:]
    gutter = False
    text = rest
    if _GUTTER_SEPARATOR.match(text):
        text, gutter = "", True
    else:
        head = _GUTTER_GROUP_HEAD.match(text)
        if head is not None:
            text = text[head.end() :]
        bars = _GUTTER.match(text)
        if bars is not None:
            text, gutter = text[bars.end() :], True
    if pid is None and keys:
        found = re.search(r"pid=(\d+)|\[(\d+)\]", keys[0])
        if found is not None:
            pid = int(found.group(1) or found.group(2))
    return _Line(
        number=number,
        raw=raw.rstrip("\r\n"),
        key=" ".join(keys),
        prefix=prefix,
        rest=rest,
        text=text.strip(),
        timestamp=timestamp,
        pid=pid,
        gutter=gutter,
        evidence=evidence,
    )


def _structural(text: str) -> bool:
    """A traceback line that is never part of an error message."""
    return bool(
        _TRACEBACK_START.match(text)
        or _CHAIN.match(text)
        or _FRAME.match(text)
        or (text and _CARETS.match(text))
        or _ELISION.match(text)
    )


# --- servers ---------------------------------------------------------------------------------

_PACKAGE_SERVERS: dict[str, Server] = {
    "vllm": "vllm",
    "sglang": "sglang",
    "lmdeploy": "lmdeploy",
    "exo": "exo",
    "tensorrt_llm": "tensorrt-llm",
    "llama_stack": "llama-stack",
}
_LINE_SERVERS: tuple[tuple[Server, re.Pattern[str]], ...] = (
    ("vllm", re.compile(r"\((?:APIServer|EngineCore\w*|VllmWorker\w*|Worker\w*)\b[^()]*pid=\d+")),
    ("vllm", re.compile(r"\bvllm\.(?:entrypoints|engine|v1)\b|\bvllm serve\b")),
    ("vllm", re.compile(r"\[(?:serving_chat|serving|serving_responses|api_server)\.py:\d+\]")),
    ("sglang", re.compile(r"\bsglang\b|^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d (?:TP|DP|PP|EP)\d")),
    ("lmdeploy", re.compile(r" - lmdeploy - |\blmdeploy\b|\[TM\]\[")),
    ("tensorrt-llm", re.compile(r"tensorrt_llm|TensorRT-LLM|\btrtllm\b|\[TRT-LLM\]", re.I)),
    ("llama-stack", re.compile(r"llama[_-]stack", re.I)),
    ("ollama", re.compile(r"\bollama\[\d+\]|\bsource=[\w./-]+\.go:\d+|\bollama\b", re.I)),
    ("lmstudio", re.compile(r"\bLM ?Studio\b|\blmstudio\b", re.I)),
    ("llama.cpp", re.compile(r"\bllama[-_]server\b|\bllama\.cpp\b|\bcommon_chat_parse", re.I)),
)


_ANY_SERVER = re.compile(
    "|".join(
        f"(?P<s{index}>{'(?i:' if pattern.flags & re.I else '(?:'}{pattern.pattern}))"
        for index, (_, pattern) in enumerate(_LINE_SERVERS)
    )
)


def _line_server(line: str) -> Server | None:
    frame = _FRAME.search(line.replace("|", " ").strip()) if 'File "' in line else None
    if frame is not None:
        return _path_server(frame["path"])
    match = _ANY_SERVER.search(line)
    if match is None or match.lastgroup is None:
        return None
    return _LINE_SERVERS[int(match.lastgroup[1:])][0]


def _path_server(path: str) -> Server | None:
    parts = re.split(r"[/\\]+", path.strip())
    for index, part in enumerate(parts[:-1]):
        if part in ("site-packages", "dist-packages") and parts[index + 1] in _PACKAGE_SERVERS:
            return _PACKAGE_SERVERS[parts[index + 1]]
    return next((_PACKAGE_SERVERS[p] for p in parts[:-1] if p in _PACKAGE_SERVERS), None)


# --- openai-harmony versions -----------------------------------------------------------------

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
_HARMONY_INIT = re.compile(r"harmony[/\\]+_*init_*\.py$")


def _versions_of_frame(path: str, line: int, func: str | None) -> frozenset[int] | None:
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


# --- error messages --------------------------------------------------------------------------


def _phrase(text: str) -> str:
    """A phrase that survives wrapping: any whitespace, or none, between its words."""
    return r"\s*".join(re.escape(word) for word in text.split())


# Patterns name what they find; `_KINDS` maps each to its kind.
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(pattern, re.I))
    for name, pattern in (
        ("leftover", _phrase("unexpected tokens remaining in message header")),
        (
            "leftover_old",
            _phrase("could not parse header:")
            + r"\s*"
            + _phrase("too many tokens remaining")
            + r"(?:\s*"
            + _phrase("after extracting content-type and recipient")
            + ")?",
        ),
        (
            "unexpected_token",
            _phrase("unexpected token")
            + r"\s*(?P<token>\d+|N)\b\s*"
            + r"while(?:\s*expecting(?:\s*start\s*token(?:\s*(?P<expected>\d+))?)?)?",
        ),
        ("unknown_role", _phrase("unknown role:")),
        (
            "empty_channel",
            _phrase("channel marker present but no channel value")
            + r"(?:\s*"
            + _phrase("found in header")
            + ")?",
        ),
        (
            "header_eos",
            _phrase("unexpected EOS while waiting for message header")
            + r"(?:\s*"
            + _phrase("to complete")
            + ")?",
        ),
        ("missing_role", _phrase("message header did not contain a role")),
        ("header_decode", _phrase("could not decode header")),
        ("vocab_load", _phrase("error downloading or loading vocab file")),
        ("render_error", _phrase("invalid conversation JSON")),
        ("ollama_tool", _phrase("error parsing tool call")),
        ("lmstudio_tool", _phrase("failed to parse tool call")),
        (
            "llamacpp_input",
            _phrase("failed to parse input at pos") + r"(?:ition)?\s*(?P<pos>\d+)",
        ),
        (
            "template_content",
            r"(?:you\s*have\s*)?"
            + _phrase("passed a message containing <|channel|> tags in the content field"),
        ),
    )
)
_KINDS: dict[str, Kind] = {
    "leftover": "header_leftover",
    "leftover_old": "header_leftover",
    "unexpected_token": "unexpected_token",
    "unknown_role": "unknown_role",
    "empty_channel": "empty_channel",
    "header_eos": "header_eos",
    "missing_role": "missing_role",
    "header_decode": "header_decode",
    "vocab_load": "vocab_load",
    "render_error": "render_error",
    "ollama_tool": "tool_call_parse",
    "lmstudio_tool": "tool_call_parse",
    "llamacpp_input": "input_parse",
    "template_content": "template_content",
}
_CANONICAL: dict[str, str] = {
    "leftover": "unexpected tokens remaining in message header",
    "leftover_old": "Could not parse header: too many tokens remaining after extracting "
    "content-type and recipient",
    "unknown_role": "Unknown role:",
    "empty_channel": "channel marker present but no channel value found in header",
    "header_eos": "Unexpected EOS while waiting for message header to complete",
    "missing_role": "message header did not contain a role",
    "header_decode": "could not decode header",
    "vocab_load": "error downloading or loading vocab file",
    "render_error": "invalid conversation JSON",
    "ollama_tool": "error parsing tool call",
    "lmstudio_tool": "Failed to parse tool call",
    "template_content": "You have passed a message containing <|channel|> tags in the content "
    "field",
}
_SERVER_OF_PATTERN: dict[str, Server] = {
    "ollama_tool": "ollama",
    "llamacpp_input": "llama.cpp",
    "template_content": "llama.cpp",
}
_RULE_OF_PATTERN: dict[str, str] = {
    "vocab_load": "HD171",
    "render_error": "HD175",
    "ollama_tool": "HD181",
    "lmstudio_tool": "HD182",
    "llamacpp_input": "HD183",
    "template_content": "HD184",
}
_ANY_PATTERN = re.compile("|".join(f"(?:{p.pattern})" for _, p in _PATTERNS), re.I)

_SPECIAL_TEXT = re.compile(
    r"<\|(?:start|end|message|channel|constrain|return|call|reserved_\d+)\|>"
)
_LEAK = re.compile(
    r"""(?P<q0>["']?)(?P<field>content|reasoning_content|reasoning|text|output_text|name)(?P=q0)"""
    r"""\s*:\s*(?P<q>["'])(?P<value>(?:\\.|(?!(?P=q)).)*)"""
)

_OPENER = re.compile(r"""(?:(?<=[(\[{:=,\s])|^)(\\*)(['"])""")


@dataclass(frozen=True)
class _Hit:
    """An error message found in a text, read to its end."""

    name: str
    start: int
    message: str  # from the message start to its end, wrapper quoting undone
    closed: bool  # the message's end was seen (closing quote, bracket, parenthesis)
    end: int  # where the message (and its closing quote) ends in the text
    shape: str  # exception, bare, wrapper, json, repr, quoted
    quote: str | None  # the quote the message sits in, when it does
    remainder: _Remainder | None
    token: int | None
    role_word: str | None
    context: str | None


@dataclass(frozen=True)
class _Remainder:
    words: tuple[str, ...]
    closed: bool
    form: str  # list, some, none, text, absent


# Every pattern holds one of these words whole, so a line without them holds no message.
_FRAGMENTS = ("unexpected", "parse", "role", "channel", "decode", "vocab", "conversation", "tool")


def _may_hold_error(text: str) -> bool:
    lower = text.lower()
    return any(fragment in lower for fragment in _FRAGMENTS)


def _find_hit(text: str, position: int = 0) -> _Hit | None:
    """The first error message in `text` from `position` on, or None."""
    if not _may_hold_error(text) or not _ANY_PATTERN.search(text, position):
        return None
    best: tuple[int, str, re.Match[str]] | None = None
    for name, pattern in _PATTERNS:
        match = pattern.search(text, position)
        if match is not None and (best is None or match.start() < best[0]):
            best = (match.start(), name, match)
    if best is None:
        return None
    return _read_hit(text, best[1], best[2])


def _read_hit(text: str, name: str, match: re.Match[str]) -> _Hit:
    """Read the message `match` starts to its end: out of its quoting, to its kind's fields."""
    start = match.start()
    opener = _find_opener(text, start)
    if opener is not None:
        opened_at, level, quote = opener
        end = _find_closing(text, start, quote, level)
        body = text[start : len(text) if end is None else end]
        stop = len(text) if end is None else end + 2**level
        for _ in range(level + 1):
            body = _unescape(body)
        closed = end is not None
        before = text[:opened_at].rstrip()
        if re.search(r"""["']?\w+["']?\s*:$""", before):
            shape = "json"
        elif re.search(r"\w\($", before):
            shape = "repr"
        else:
            shape = "quoted"
    else:
        body = text[start:].rstrip()
        stop = len(text)
        if 'Some(\\"' in body or '[\\"' in body:
            body = _unescape(body)  # quoted once more on its way into this line
        closed = True
        before = text[:start].strip()
        if not before:
            shape = "bare"
        elif re.fullmatch(r"[\w.]*(?:Error|Exception)\s*:?", before):
            shape = "exception"
        else:
            shape = "wrapper"
    offset = match.end() - start
    rest = body[offset:]
    remainder: _Remainder | None = None
    token: int | None = None
    role_word: str | None = None
    context: str | None = None
    if name in ("leftover", "leftover_old"):
        remainder, used = _parse_remainder(rest)
        message = _CANONICAL[name] + rest[:used].rstrip()
        if opener is None:  # a plain line ends with its list or Some(...), if the log kept it
            closed = remainder.closed
            if closed and body == text[start : start + len(body)]:
                stop = start + offset + used
    elif name == "unexpected_token":
        value = match.group("token")
        token = int(value) if value.isdigit() else None
        expected = match.group("expected") or str(START)
        message = f"Unexpected token {value} while expecting start token {expected}"
    elif name == "unknown_role":
        words = rest.split()
        role_word = words[0] if words else ""
        if opener is None:
            role_word = _strip_unbalanced(role_word)
        message = f"Unknown role: {role_word}"
    elif name in ("empty_channel", "header_eos", "missing_role"):
        message = _CANONICAL[name]
    else:
        tail = rest.rstrip()
        if opener is None:
            tail = _strip_unbalanced(tail)
        if name == "template_content":
            tail = re.split(r"\s+at row \d+, column \d+", tail)[0]
        if name == "lmstudio_tool":
            tail, _, output = tail.partition("Model Output:")
            context = output.strip() or None
        if name == "ollama_tool":
            raw = re.search(r"raw='(?P<raw>.*)',\s*err=", tail) or re.search(r"raw=(\S+)", tail)
            context = raw.group(1) if raw else None
        prefix = _CANONICAL.get(name, body[:offset])
        message = (prefix + tail).strip()
    return _Hit(
        name=name,
        start=start,
        message=message,
        closed=closed,
        end=max(stop, start + 1),
        shape=shape,
        quote=opener[2] if opener is not None else None,
        remainder=remainder,
        token=token,
        role_word=role_word,
        context=context,
    )


_PAIRS = {")": "(", "]": "[", "}": "{"}


def _strip_unbalanced(value: str) -> str:
    """Drop the quotes, brackets and commas a plain line's wrapper left after the message."""
    value = value.rstrip()
    while value:
        last = value[-1]
        if last in _PAIRS:
            unbalanced = value.count(last) > value.count(_PAIRS[last])
        elif last in "\"'":
            unbalanced = value.count(last) % 2 == 1
        else:
            unbalanced = last in ",;"
        if not unbalanced:
            break
        value = value[:-1].rstrip()
    return value


def _find_opener(text: str, start: int) -> tuple[int, int, str] | None:
    """The innermost string still open at `start`: (position, escape level, quote)."""
    candidates = list(_OPENER.finditer(text, max(0, start - OPENER_REACH), start))
    for candidate in reversed(candidates):
        level = (len(candidate.group(1)) + 1).bit_length() - 1
        quote = candidate.group(2)
        if _find_closing(text, candidate.end(), quote, level, start) is None:
            return candidate.start(), level, quote
    return None


def _find_closing(
    text: str, position: int, quote: str, level: int, end: int | None = None
) -> int | None:
    """Index of the backslashes before the quote that closes a string at `level`, or None."""
    modulus, wanted = 2 ** (level + 1), 2**level - 1
    stop = len(text) if end is None else end
    index = text.find(quote, position, stop)
    while index >= 0:
        run = 0
        while index - run - 1 >= position and text[index - run - 1] == "\\":
            run += 1
        if run % modulus == wanted:
            return index - run
        index = text.find(quote, index + 1, stop)
    return None


_ESCAPE = re.compile(r"\\(u\{[0-9a-fA-F]{1,6}\}|u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2}|.)", re.S)
_SIMPLE_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", '"': '"', "'": "'", "\\": "\\"}


def _unescape_match(match: re.Match[str]) -> str:
    code = match.group(1)
    if code in _SIMPLE_ESCAPES:
        return _SIMPLE_ESCAPES[code]
    if code == "/":
        return "/"
    if code[0] in "ux" and len(code) > 1:
        digits = code[1:].strip("{}")
        value = int(digits, 16)
        if value <= 0x10FFFF:
            return chr(value)
    return match.group(0)


def _unescape(text: str) -> str:
    """One level of backslash escapes (JSON, Python repr, Rust Debug) undone."""
    return _ESCAPE.sub(_unescape_match, text) if "\\" in text else text


def _parse_remainder(rest: str) -> tuple[_Remainder, int]:
    """The leftover words after `...message header`, and how much of `rest` they used."""
    index = 0
    while index < len(rest) and rest[index] in " \t\n:":
        index += 1
    if index >= len(rest):
        form_open = rest.strip() == ":"
        return _Remainder((), not form_open, "absent"), len(rest.rstrip())
    if rest.startswith("Some(", index):
        inner = index + 5
        while inner < len(rest) and rest[inner].isspace():
            inner += 1
        if inner >= len(rest) or rest[inner] != '"':
            return _Remainder((), False, "some"), len(rest)
        value, closed, after = _rust_string(rest, inner + 1)
        closed = closed and rest.startswith(")", after)
        return _Remainder(tuple(value.split()), closed, "some"), after + (1 if closed else 0)
    if rest.startswith("[", index):
        return _parse_list(rest, index)
    if rest.startswith("None", index):
        return _Remainder((), True, "none"), index + 4
    words = tuple(_strip_unbalanced(rest[index:]).split())
    return _Remainder(words, True, "text"), len(rest)


def _parse_list(text: str, index: int) -> tuple[_Remainder, int]:
    """A Rust Debug list of strings `["a", "b"]` from `text[index] == "["`."""
    words: list[str] = []
    index += 1
    while True:
        while index < len(text) and text[index] in " \t\r\n,":
            index += 1
        if index >= len(text):
            return _Remainder(tuple(words), False, "list"), index
        char = text[index]
        if char == "]":
            return _Remainder(tuple(words), True, "list"), index + 1
        if char != '"':  # an elision or damage: the rest is unknown
            return _Remainder(tuple(words), False, "list"), index
        word, closed, index = _rust_string(text, index + 1)
        if word:
            words.append(word)
        if not closed:
            return _Remainder(tuple(words), False, "list"), index


def _rust_string(text: str, index: int) -> tuple[str, bool, int]:
    """A Rust Debug string body from just after its opening quote: (value, closed, next)."""
    out: list[str] = []
    while index < len(text):
        char = text[index]
        if char == '"':
            return "".join(out), True, index + 1
        if char == "\\" and index + 1 < len(text):
            escape = _ESCAPE.match(text, index)
            if escape is not None:
                out.append(_unescape_match(escape))
                index = escape.end()
                continue
        out.append(char)
        index += 1
    return "".join(out), False, index


# --- the extractor ---------------------------------------------------------------------------


@dataclass
class _KeyState:
    """What one process prefix has shown lately; a few numbers and a server, never lines."""

    episode_start: int = 0  # line of the last traceback that was not chained to the previous
    last_traceback_line: int = -(10**9)
    chain_line: int = -(10**9)
    versions: frozenset[int] | None = None  # from openai_harmony/__init__.py frames
    traceback_server: Server | None = None
    traceback_start: int | None = None
    server: Server | None = None
    server_line: int = -(10**9)
    timestamp: str | None = None
    timestamp_line: int = -(10**9)
    pid: int | None = None
    # Lines this prefix has shown, and the count at its last traceback line: when several
    # processes interleave, distances within one traceback are counted in its own lines.
    seen: int = 0
    last_traceback_seen: int = -(10**9)

    def traceback_distance(self, number: int, keyed: bool) -> int:
        """How far back this prefix's last traceback line is, in lines of this prefix."""
        distance = number - self.last_traceback_line
        return min(distance, self.seen - self.last_traceback_seen) if keyed else distance


@dataclass
class _Candidate:
    """An error line being read: it may continue on the next lines."""

    line: _Line
    text: str
    last_line: int
    hit: _Hit
    continued: int = 0
    lead: _Line | None = None  # a prefix-only line just before (LM Studio's timestamp line)
    stale: bool = False  # text grew since `hit` was read
    offset: int = 0  # where in `text` to look for the message (a second one on a line)


def _reread(candidate: _Candidate) -> None:
    hit = _find_hit(candidate.text, candidate.offset)
    if hit is not None:  # always: the text still starts with the same message
        candidate.hit = hit
    candidate.stale = False


def _may_close(hit: _Hit, text: str) -> bool:
    """Whether `text` could end the open message: its closing quote, `]` or `)`."""
    if hit.quote is not None:
        return hit.quote in text
    remainder = hit.remainder
    if remainder is not None and remainder.form == "list":
        return "]" in text
    if remainder is not None and remainder.form == "some":
        return ")" in text
    return True


@dataclass
class _Pending:
    """A failure waiting to see whether the log repeats it."""

    error: LogError
    key: str
    shape: str
    norm: str
    last_line: int
    emitted: bool = False


def extract_errors(lines: Iterable[str], first_line: int = 1) -> Iterator[LogError]:
    """Every Harmony failure in `lines`, once each, in about the order of their lines."""
    extractor = _Extractor()
    number = first_line - 1
    for number, raw in enumerate(lines, start=first_line):
        yield from extractor.feed(number, raw)
    yield from extractor.close(number)


def extract_text(text: str) -> tuple[LogError, ...]:
    """`extract_errors` over a whole text, sorted by line."""
    found = extract_errors(text.lstrip("\ufeff").split("\n"))
    return tuple(sorted(found, key=lambda e: e.line))


class _Extractor:
    """The line-by-line machine behind `extract_errors`; its state is bounded (see MAX_*)."""

    def __init__(self) -> None:
        self.keys: OrderedDict[str, _KeyState] = OrderedDict()
        self.open: _Candidate | None = None
        self.previous: _Line | None = None
        self.previous_hit = False
        self.pending: list[_Pending] = []
        self.recent: deque[_Pending] = deque(maxlen=32)

    def state(self, key: str) -> _KeyState:
        state = self.keys.get(key)
        if state is None:
            state = self.keys[key] = _KeyState()
            if len(self.keys) > MAX_KEYS:
                self.keys.popitem(last=False)
        else:
            self.keys.move_to_end(key)
        return state

    # -- feeding --

    def feed(self, number: int, raw: str) -> Iterator[LogError]:
        line = _anatomize(number, raw)
        consumed = False
        if self.open is not None:
            consumed = self._continue(line)
        if not consumed:
            self._observe(line)
            self._detect(line)
        self.previous = line
        yield from self._flush(number)

    def close(self, number: int) -> Iterator[LogError]:
        if self.open is not None:
            self._finalize(self.open)
            self.open = None
        yield from self._flush(number + DUP_WINDOW + 1)

    def _continue(self, line: _Line) -> bool:
        """Extend the open error with `line` if it is the rest of it; else maybe close it."""
        candidate = self.open
        assert candidate is not None
        text = line.text
        continuation = (
            bool(text)
            and not _structural(text)
            and candidate.continued < MAX_CONTINUATION_LINES
            and len(candidate.text) < MAX_MESSAGE_CHARS
            and not (_may_hold_error(text) and _ANY_PATTERN.search(text))
        )
        if continuation and not line.prefix and line.number == candidate.last_line + 1:
            joined = candidate.text + line.rest  # a terminal wrap: the text goes on as is
        elif continuation and line.prefix and line.prefix == candidate.line.prefix:
            joined = candidate.text + "\n" + line.rest  # one record logged as several lines
        else:
            interleaved = (
                line.key != candidate.line.key
                and bool(line.key)
                and bool(candidate.line.key)
                and line.number - candidate.last_line <= 20
            )
            if not interleaved:
                self._finalize(candidate)
                self.open = None
            return False
        candidate.text = joined
        candidate.last_line = line.number
        candidate.continued += 1
        if not _may_close(candidate.hit, line.rest):
            candidate.stale = True  # read it again when it can have ended: no quadratic work
            return True
        _reread(candidate)
        if candidate.hit.closed:
            self._finalize(candidate)
            self.open = None
        return True

    def _observe(self, line: _Line) -> None:
        """Keep what later errors need from this line: tracebacks, versions, time, server."""
        state = self.state(line.key)
        number, text = line.number, line.text
        state.seen += 1
        if line.timestamp is not None:
            state.timestamp, state.timestamp_line = line.timestamp, number
        if line.pid is not None:
            state.pid = line.pid
        if line.evidence is not None:
            state.server, state.server_line = line.evidence, number
        if _TRACEBACK_START.match(text):
            chained = number - state.chain_line <= 4 or line.gutter
            if not chained:
                state.episode_start = number
                _new_traceback(state, number)
            elif number - state.last_traceback_line > TRACEBACK_REACH:
                _new_traceback(state, number)
            state.last_traceback_line = number
            state.last_traceback_seen = state.seen
        elif _CHAIN.match(text):
            state.chain_line = state.last_traceback_line = number
            state.last_traceback_seen = state.seen
        else:
            frame = _FRAME.match(text)
            if frame is None and ".py:" in text and text.startswith(("File ", "│")):
                frame = _FRAME_SHORT.match(text.lstrip("│ "))
            if frame is not None:
                if number - state.last_traceback_line > TRACEBACK_REACH:
                    _new_traceback(state, number)  # its head was cut or elided
                state.last_traceback_line = number
                state.last_traceback_seen = state.seen
                server = _path_server(frame["path"])
                if server is not None and state.traceback_server is None:
                    state.traceback_server = server
                versions = _versions_of_frame(frame["path"], int(frame["line"]), frame["func"])
                if versions is not None:
                    state.versions = versions
            elif line.gutter or _CARETS.match(text) or _TRACEBACK_FURNITURE.match(text):
                state.last_traceback_line = number
                state.last_traceback_seen = state.seen
            elif (
                line.rest.startswith((" ", "\t"))
                and state.traceback_distance(number, bool(line.key)) <= 1
                and not _ANY_PATTERN.search(text)
            ):
                state.last_traceback_line = number  # the source line under a frame
                state.last_traceback_seen = state.seen

    def _detect(self, line: _Line) -> None:
        """Start a candidate at an error message (or two lines a wrap broke one across)."""
        hit = _find_hit(line.text) if line.text else None
        candidate: _Candidate | None = None
        if hit is not None:
            candidate = _Candidate(line=line, text=line.text, last_line=line.number, hit=hit)
        elif (
            not line.prefix
            and line.text
            and self.previous is not None
            and self.previous.text
            and not self.previous_hit
            and not _structural(line.text)
        ):
            # A message broken by a terminal wrap: its words span the two lines.
            head = self.previous.text
            joined = head + line.rest
            found = _find_hit(joined)
            if found is not None and found.start < len(head):
                candidate = _Candidate(
                    line=self.previous, text=joined, last_line=line.number, hit=found
                )
        self.previous_hit = candidate is not None
        if candidate is not None:
            lead = self.previous
            if lead is not None and lead.prefix and not lead.text and lead is not candidate.line:
                candidate.lead = lead
            for _ in range(MAX_ERRORS_PER_LINE):
                if not candidate.hit.closed:
                    if self.open is not None:  # one left open by an interleaved process
                        self._finalize(self.open)
                    self.open = candidate
                    return
                self._finalize(candidate)
                following = _find_hit(candidate.text, candidate.hit.end)
                if following is None:
                    return
                candidate = replace(candidate, hit=following, offset=candidate.hit.end)
            return
        if line.text.lower().startswith("model output:"):
            self._attach_model_output(line)
        elif "<|" in line.text:
            self._detect_leak(line)

    def _attach_model_output(self, line: _Line) -> None:
        for item in reversed(self.pending):
            if (
                item.error.code == "HD182"
                and line.number - item.last_line <= 3
                and item.error.context is None
            ):
                output = line.text.split(":", 1)[1].strip()
                item.error = replace(
                    item.error, context=output, found=_lmstudio_found(item.error.message, output)
                )
                item.last_line = line.number
                item.error = replace(item.error, span=(item.error.span[0], line.number))
                return

    def _detect_leak(self, line: _Line) -> None:
        for match in _LEAK.finditer(line.text):
            value = _unescape(match["value"])
            markup = _SPECIAL_TEXT.findall(value)
            if not markup:
                continue
            hit = _Hit(
                name="markup_leak",
                start=match.start(),
                message=value if len(value) <= 300 else value[:299] + "…",
                closed=True,
                end=match.end(),
                shape="json",
                quote=match["q"],
                remainder=None,
                token=None,
                role_word=None,
                context=match["field"],
            )
            self._finalize(_Candidate(line=line, text=line.text, last_line=line.number, hit=hit))
            return

    # -- findings --

    def _finalize(self, candidate: _Candidate) -> None:
        if candidate.stale:
            _reread(candidate)
        error = self._build(candidate)
        item = _Pending(
            error=error,
            key=candidate.line.key,
            shape=candidate.hit.shape,
            norm=re.sub(r"\s+", "", error.message).lower(),
            last_line=candidate.last_line,
        )
        for other in [*self.recent, *self.pending]:
            if self._same_failure(other, item):
                if not other.emitted:
                    self._merge(other, item)
                return
        self.pending.append(item)

    def _same_failure(self, old: _Pending, new: _Pending) -> bool:
        if old.key and new.key and old.key != new.key:
            return False
        if new.error.line - old.last_line > DUP_WINDOW or old.error.kind != new.error.kind:
            return False
        if new.error.kind == "markup_leak":
            return True
        if old.norm != new.norm:
            shorter, longer = sorted((old.norm, new.norm), key=len)
            return longer.startswith(shorter)  # a truncated copy, or the bare message
        state = self.state(new.key)
        if state.episode_start > old.error.line:
            return False  # a new traceback began since: the same error again
        if old.shape != new.shape:
            return True
        return not (
            old.error.timestamp
            and new.error.timestamp
            and old.error.timestamp != new.error.timestamp
        )

    def _merge(self, old: _Pending, new: _Pending) -> None:
        """Keep one record of a failure seen twice: the fuller message, all the evidence."""
        keep, other = (new, old) if len(new.norm) > len(old.norm) else (old, new)
        a, b = keep.error, other.error
        old.error = replace(
            a,
            server=a.server or b.server,
            harmony_version=a.harmony_version or b.harmony_version,
            timestamp=a.timestamp or b.timestamp,
            pid=a.pid if a.pid is not None else b.pid,
        )
        old.norm, old.shape = keep.norm, keep.shape
        old.last_line = max(old.last_line, new.last_line)

    def _flush(self, number: int) -> Iterator[LogError]:
        """Emit the failures no later line can repeat any more (and the oldest, past a bound)."""
        if not self.pending:
            return
        self.pending.sort(key=lambda p: p.error.line)
        excess = len(self.pending) - MAX_PENDING
        due = [
            p
            for index, p in enumerate(self.pending)
            if index < excess or number - p.last_line > DUP_WINDOW
        ]
        for item in due:
            self.pending.remove(item)
            item.emitted = True
            self.recent.append(item)
            yield item.error

    def _build(self, candidate: _Candidate) -> LogError:
        line, hit = candidate.line, candidate.hit
        state = self.state(line.key)
        in_traceback = state.traceback_distance(line.number, bool(line.key)) <= TRACEBACK_END
        since = (state.traceback_start or line.number) - 2  # its record line comes just before
        kind = "markup_leak" if hit.name == "markup_leak" else _KINDS[hit.name]
        rule = _rule_for(hit, kind)
        server = (
            _SERVER_OF_PATTERN.get(hit.name)
            or line.evidence
            or (state.traceback_server if in_traceback else None)
            or (state.server if line.key or (in_traceback and state.server_line >= since) else None)
            or (candidate.lead.evidence if candidate.lead is not None else None)
            or ("lmstudio" if hit.name == "lmstudio_tool" else None)
        )
        versions = _form_versions(hit)
        if in_traceback and state.versions is not None:
            both = state.versions & versions if versions is not None else state.versions
            versions = both or versions
        timestamp = line.timestamp
        if timestamp is None and in_traceback and state.timestamp_line >= since:
            timestamp = state.timestamp
        if timestamp is None and candidate.lead is not None:
            timestamp = candidate.lead.timestamp
        pid = line.pid if line.pid is not None else state.pid if line.key else None
        start = line.number
        if in_traceback and state.traceback_start is not None:
            start = min(start, max(state.traceback_start, state.episode_start))
        if in_traceback:
            state.last_traceback_line = -(10**9)  # this error line ended it
        remainder = hit.remainder
        words = remainder.words if remainder is not None else ()
        truncated = remainder is not None and not remainder.closed
        expected, found = _expected_found(kind, hit, rule)
        return LogError(
            line=line.number,
            span=(start, candidate.last_line),
            kind=kind,
            code=rule.code,
            severity=rule.severity,
            title=rule.title,
            message=hit.message,
            raw=line.raw if len(line.raw) <= MAX_RAW_CHARS else line.raw[: MAX_RAW_CHARS - 1] + "…",
            server=server,
            harmony_version=version_label(versions),
            timestamp=timestamp,
            pid=pid,
            token=hit.token,
            header_remainder=" ".join(words) if remainder is not None and words else None,
            header_words=words,
            remainder_truncated=truncated,
            reconstructed=reconstruct(words, truncated) if words and rule.code != "HD105" else None,
            context=hit.context if kind != "markup_leak" else None,
            expected=expected,
            found=found,
            cause=rule.cause,
            fix=rule.fix,
        )


def _new_traceback(state: _KeyState, number: int) -> None:
    state.traceback_start = number
    state.versions = None
    state.traceback_server = None


def _form_versions(hit: _Hit) -> frozenset[int] | None:
    if hit.name == "leftover_old":
        return frozenset({1})
    if hit.remainder is None:
        return None
    if hit.remainder.form == "list":
        return frozenset({1, 2, 3, 4})
    if hit.remainder.form == "some":
        return frozenset({5})
    return None


def _rule_for(hit: _Hit, kind: Kind) -> Rule:
    if hit.name == "markup_leak":
        return rules.RULES["HD205"]
    code = _RULE_OF_PATTERN.get(hit.name)
    if code is not None:
        return rules.RULES[code]
    parser_kind: ErrorKind = kind  # type: ignore[assignment]  # the rest are parser kinds
    leftover = " ".join(hit.remainder.words) if hit.remainder is not None else None
    return classify(
        FaultContext(kind=parser_kind, leftover=leftover, token=hit.token, role_word=hit.role_word)
    )


def reconstruct(words: tuple[str, ...], truncated: bool) -> str:
    """The header as the model most likely wrote it, the parts the log cannot show marked.

    openai-harmony cut out `<|channel|>NAME` and took the last one or two words as content
    type and recipient before it reported what was left.
    """
    body = " ".join(words)
    if truncated:
        return f"<|channel|>… {body} … (cut by the log)"
    return f"<|channel|>… {body} [1-2 words taken as recipient, content type]<|message|>"


def _token_text(token: int) -> str:
    return special_token_name(token) if token >= FIRST_SPECIAL else "an ordinary text token"


def _expected_found(kind: Kind, hit: _Hit, rule: Rule) -> tuple[str, str]:
    match kind:
        case "header_leftover":
            words = hit.remainder.words if hit.remainder is not None else ()
            if not words:
                return f"a header: {HEADER_SHAPE}", "leftover words (this log does not show them)"
            if hit.remainder is not None and not hit.remainder.closed:
                found = (
                    f"{len(words)} word(s) openai-harmony could not place before the log cut "
                    f"the list at {words[-1]!r}; the header's last one or two words, taken as "
                    "recipient and content type, never appear in the message"
                )
            else:
                found = (
                    f"{len(words)} word(s) openai-harmony could not place, ending {words[-1]!r}; "
                    "it had already taken the header's last one or two words as recipient and "
                    "content type, so the words it blames are not the last ones the model wrote"
                )
            recipient = next((w for w in words if w.startswith("to=")), None)
            if rule.code == "HD102" and recipient is not None:
                found += (
                    f"; {recipient!r} left over means another recipient followed it, or a word "
                    "followed the content type (`<|constrain|>json json`)"
                )
            return f"a header: {HEADER_SHAPE}", found
        case "unexpected_token":
            if hit.token is None:
                return "<|start|> (id 200006) to open the next message", "a token (id not logged)"
            return "<|start|> (id 200006) to open the next message", (
                f"token {hit.token} ({_token_text(hit.token)})"
            )
        case "unknown_role":
            return (
                "a role (assistant, user, system, developer, tool) or NAME to=RECIPIENT",
                f"role {hit.role_word!r}",
            )
        case "empty_channel":
            return "a channel name right after <|channel|>", "<|channel|> then nothing"
        case "header_eos":
            return "<|message|> to close the header", "end of stream inside the header"
        case "missing_role":
            return "a role after <|start|>", "<|message|> right after <|start|>"
        case "header_decode":
            return "header tokens that decode as UTF-8", "invalid UTF-8 in the header"
        case "vocab_load":
            return "o200k_base.tiktoken, local or downloadable", _detail(hit.message)
        case "render_error":
            return "a conversation openai-harmony can render", _detail(hit.message)
        case "tool_call_parse":
            if hit.name == "lmstudio_tool":
                return "a Harmony tool call with JSON arguments", _lmstudio_found(
                    hit.message, hit.context
                )
            err = re.search(r"\berr=(.*)$", hit.message)
            reason = err.group(1).strip() if err else _detail(hit.message)
            return "JSON arguments after the tool-call header", (
                reason + (f"; raw {hit.context!r}" if hit.context else "")
            )
        case "input_parse":
            return "output the llama.cpp Harmony parser accepts", _detail(hit.message)
        case "template_content":
            return "assistant content without Harmony markup", (
                "<|channel|>...<|message|> markup in a message's content field"
            )
        case "markup_leak":
            markup = sorted(set(_SPECIAL_TEXT.findall(hit.message)))
            return "plain text in the returned message", (
                f"{', '.join(markup)} in {hit.context or 'content'}"
            )
    return "", rule.title  # pragma: no cover - every kind is handled above


def _detail(message: str) -> str:
    head, _, tail = message.partition(":")
    return (tail or head).strip()


def _lmstudio_found(message: str, output: str | None) -> str:
    reason = _detail(message) or "no reason given"
    if output:
        return f"{reason}; model output {output[:200]!r}"
    return reason
