"""Line anatomy: process tags, record prefixes, paste damage, gutters, traceback furniture."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, Any, Final, NamedTuple

from harmony_doctor.inputs.timestamps import dated
from harmony_doctor.lazy_regex import Pattern
from harmony_doctor.logs.servers import path_server, server_shapes, text_server
from harmony_doctor.models import Server
from harmony_doctor.native import native_for, new_anatomy

if TYPE_CHECKING:
    from harmony_doctor.native import Anatomy

# How much of an error's message and of its raw line a LogError keeps (the rest elided with …).
MAX_MESSAGE_CHARS = 300
MAX_RAW_CHARS = 4000


def clip(text: str, limit: int) -> str:
    """`text` whole, or its first `limit - 1` characters and "…"."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


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
_WRAP_PADDING = Pattern(r"(?<=\S) {8,}(?=\S)")
_MARKDOWN = Pattern(r"^\s*(?:>\s?)+|^\s*`+(?:[A-Za-z]+\s*$)?|`+\s*$")

_TS_ISO = r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?"
_TS_MONTH_DAY = r"\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?"
_TS_SYSLOG = r"[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d"
_TS_CLOCK = r"\d\d:\d\d:\d\d(?:[.,]\d+)?"
_LEVEL = r"(?:TRACE|DEBUG|INFO|NOTICE|WARNING|WARN|ERROR|ERR|CRITICAL|FATAL)"

# Process tags: they tell interleaved processes apart.
_KEY_PREFIXES = (
    Pattern(r"^(?P<key>[A-Za-z0-9][\w.-]*[-_]\d+)\s+\|\s?"),  # docker compose `vllm-1  | `
    Pattern(  # journald: `Aug 10 12:00:01 host ollama[812]: `, the host left out or not
        rf"^(?P<ts>{_TS_SYSLOG}) (?:\S+ )?(?P<key>[\w.@/-]+\[(?P<pid>\d+)\]):\s?"
    ),
    Pattern(r"^\((?P<key>[^()]*?\bpid=(?P<pid>\d+)[^()]*)\)\s?"),  # vLLM `(APIServer pid=1)`
)
# Record prefixes: level, time, source. First the shapes servers write...
_SERVER_RECORDS = (
    # vLLM `ERROR 08-06 23:25:57 [serving_chat.py:1001] `, `ERROR [serving.py:830] `, no `[`
    Pattern(
        rf"^(?P<level>{_LEVEL})\s+(?:(?P<ts>{_TS_MONTH_DAY}|{_TS_ISO})\s+)?"
        r"\[?(?P<src>[\w.-]+\.py:\d+)\]\s?"
    ),
    # lmdeploy `2025-09-15 11:29:27,572 - lmdeploy - ERROR - async_engine.py:657 - `
    Pattern(rf"^(?P<ts>{_TS_ISO}) - (?P<src>[\w.]+) - (?P<level>{_LEVEL}) - (?:[\w.]+:\d+ - )?"),
    # llama-server's module and function (`srv  %12.*s: `: the name right-aligned in 12
    # columns, cut at 12), a slot's id and task after it: `srv  log_server_r: `, `que
    # start_loop: `, `slot update_slots: id  0 | task 8 | `; newer builds may write the time
    # since start and a level letter first (`0.01.234.567 I `), not a time of day (no ts)
    Pattern(
        r"^(?:\d+\.\d\d\.\d{3}\.\d{3} )?(?:[IWED] )?(?P<src>(?:srv |que |res |slot) [ \w()~]{11}"
        r"[\w()~]): (?:id +-?\d+ \| task -?\d+ \| ?)?"
    ),
)
# ... then those of logging libraries...
_LIBRARY_RECORDS = (
    # loguru `2025-01-01 12:00:00.123 | ERROR    | module:function:12 - `
    Pattern(rf"^(?P<ts>{_TS_ISO})\s*\|\s*(?P<level>{_LEVEL})\s*\|\s*(?P<src>[\w.<>:-]+)\s+-\s"),
    # loguru `[ ERROR | logging:handle:1681 ] `
    Pattern(rf"^\[\s*(?P<level>{_LEVEL})\s*\|\s*(?P<src>[\w.<>:-]+)\s*\]\s?"),
    # logfmt (Ollama, Go slog) `time=... level=ERROR source=server.go:1 msg=...`: keep msg=
    Pattern(r"^time=(?P<ts>\S+)\s+level=(?P<level>\w+)(?:\s+source=(?P<src>\S+))?\s+(?=msg=)"),
)
# ... then a time, a level or a source tag as any program writes them, bracketed or not.
_PLAIN_RECORDS = (
    # `[2025-08-07 21:37:03 TP0] `, `[2025-08-07 21:37:03] ERROR:    `, `[..][ERROR][model] `
    Pattern(
        rf"^\[(?P<ts>{_TS_ISO}|{_TS_MONTH_DAY}|{_TS_CLOCK})(?:\s+(?P<src>[^\]]*))?\]"
        rf"(?:\s*\[(?P<level>{_LEVEL})\])?(?:\[[^\]]*\])*\s*(?:(?P<level2>{_LEVEL}):?\s+)?"
    ),
    # `2025-08-07 21:37:03 ERROR `, `2025-08-07T21:37:03Z [ERROR] `, `ERROR 2025-08-07 ...`
    Pattern(rf"^(?P<ts>{_TS_ISO})\s+\[?(?P<level>{_LEVEL})\]?:?(?:\s+|$)"),
    Pattern(rf"^(?P<level>{_LEVEL})\s+(?P<ts>{_TS_ISO})\s+"),
    # a source tag alone, as pasted from vLLM: `[serving_chat.py:1001] `
    Pattern(r"^\[(?P<src>[\w.-]+\.py:\d+)\]\s?"),
    # Python logging and uvicorn `ERROR:root:`, `ERROR:    `
    Pattern(rf"^(?P<level>{_LEVEL}):(?:[\w.]+:|\s+)"),
    # container runtimes and `kubectl logs --timestamps`: `2025-08-07T21:37:03.1Z stdout F `
    Pattern(rf"^(?P<ts>{_TS_ISO})\s+(?:(?:stdout|stderr)\s+[FP]\s+)?"),
)
# Tried in this order: the first shape that matches is the one read.
_PREFIXES = (*_KEY_PREFIXES, *_SERVER_RECORDS, *_LIBRARY_RECORDS, *_PLAIN_RECORDS)
# All prefix shapes in one regex, each a group of its own (their named groups made plain): it
# rejects text in one call, and the group that matched names the first shape that matches, as
# trying them in order would (no shape matches empty text, so none is passed over for that).
_ANY_PREFIX = Pattern(
    "|".join(f"({re.sub(r'[(][?]P<[a-z0-9]+>', '(?:', p.pattern)})" for p in _PREFIXES)
)
_NEVER_PREFIX = frozenset(" \t|+{\"'<.:-")  # no prefix starts so: spare the regexes


def _own_groups(index: int, pattern: str) -> str:
    """`pattern` with its named groups named for shape `index` (`ts` -> `ts_3`)."""
    return re.sub(r"[(][?]P<([a-z0-9]+)>", lambda m: f"(?P<{m[1]}_{index}>", pattern)


# The same alternation with each shape's named groups kept (named for the shape): one match
# gives the shape and what it read. `_ANY_PREFIX` followed by the shape's own regex is the
# reference (`anatomize_reference`); the alternative that matches first is the shape's own
# match, as nothing follows it in the alternation.
_ANY_PREFIX_READ = Pattern(
    "|".join(f"(?P<shape_{i}>{_own_groups(i, p.pattern)})" for i, p in enumerate(_PREFIXES))
)


def _shape_names() -> list[tuple[str, str | None, str | None, str | None]]:
    """Per shape, the names of its groups in `_ANY_PREFIX_READ`: its own, and its key's,
    time's and pid's where it has them."""

    def own(group: str, index: int) -> str | None:
        return f"{group}_{index}" if f"(?P<{group}>" in _PREFIXES[index].pattern else None

    return [
        (f"shape_{i}", own("key", i), own("ts", i), own("pid", i)) for i in range(len(_PREFIXES))
    ]


@cache
def _shape_groups() -> dict[int, tuple[int | None, int | None, int | None]]:
    """Per shape (by the index of its outer group): the group numbers of its key, time, pid."""
    index = _ANY_PREFIX_READ.groupindex
    return {
        index[shape]: (
            None if key is None else index[key],
            None if ts is None else index[ts],
            None if pid is None else index[pid],
        )
        for shape, key, ts, pid in _shape_names()
    }


_MONTH_DAY_RECORD = Pattern(rf"^{_LEVEL}\s+{_TS_MONTH_DAY}\s+\[?[\w.-]+\.py:\d+\]")
_MONTH_DAY_SERVER: Server = "vllm"  # `LEVEL MM-DD HH:MM:SS [file.py:N]` is vLLM's own format

# Python's, IPython's (`HarmonyError   Traceback (most recent call last)`) and rich's heads.
TRACEBACK_START = Pattern(
    r"^(?:[\w.]+\s*|[╭┌][─ ]*)?(?:Exception Group )?Traceback \(most recent call last\)"
)
CHAIN = Pattern(
    r"^(?:During handling of the above exception|The above exception was the direct cause)"
)
FRAME = Pattern(
    r'^File\s*"(?P<path>[^"]*)"\s*,\s*line\s*(?P<line>\d+)(?:\s*,\s*in\s*(?P<func>[\w<>.]+))?'
)
# What a frame line starts with (`File "path", line N`, IPython's `File path:N`), and what names
# its source file in the short shapes: the facts the Rust readers are handed besides FRAME.
FRAME_START: Final = "File "
FRAME_SOURCE: Final = ".py:"
# LM Studio's line of what the model wrote starts so, in any case.
MODEL_OUTPUT: Final = "model output:"
_FRAME_QUOTED: Final = FRAME_START + '"'
# Other frame shapes: IPython `File ~/x/__init__.py:529, in f`, rich `│ /x/__init__.py:637 in f`.
FRAME_SHORT = Pattern(
    r'^(?:File\s+)?(?P<path>[~/\\.\w:-][^\s"│]*\.py):(?P<line>\d+)'
    r"(?:,?\s+in\b\s*(?:\w+\.)*(?P<func>[\w<>]+)?)?"
)
# Lines inside a traceback that are neither frames nor code: IPython arrows and cells, boxes.
TRACEBACK_FURNITURE = Pattern(r"^(?:-*>\s*\d+\s|\d+\s|Cell In\[\d+\]|[│╭╰┌└├])")
CARETS = Pattern(r"^[\s^~]*[\^~][\s^~]*$")
# A line that marks a cut: an elision a person typed, or grep's `--` between two groups of
# context lines (`grep -A/-B/-C`): the lines on either side were not adjacent.
_ELISION = Pattern(
    r"^(?:\.{3,}|…+|\[(?:\.\.\.|…|snip|truncated)[^\]]*\]|\((?:\.\.\.|…|snip|truncated)[^)]*\)"
    r"|<snip>|-- ?snip ?--|--)$",
    re.I,
)


class Line(NamedTuple):
    """One physical line taken apart: process key, prefix, and the text after them.

    A NamedTuple, as scan/core.py's records: every line of every failure window makes one, and
    a frozen dataclass costs several times as much to build."""

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


# Terminal escapes a log may carry: CSI (colours, `ESC [ ... final`), and the string family
# (OSC `ESC ]`, DCS `ESC P`, SOS `ESC X`, PM `ESC ^`, APC `ESC _`) up to its end, BEL or ST
# (`ESC \`), whichever comes first.
_ANSI = Pattern(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[\]PX^_][^\x07\x1b]*(?:\x07|\x1b\\)")
_HTML_ENTITY = Pattern(r"&(?:quot|apos|lt|gt|amp|#\d+|#x[0-9a-fA-F]+);")


def _clean(raw: str) -> str:
    """The line as its writer meant it: no colours, straight quotes, no paste damage."""
    line = raw.rstrip("\r\n")
    if "\x1b" in line:
        line = _ANSI.sub("", line)
    if "&" in line and _HTML_ENTITY.search(line):
        import html  # rarely needed: not loaded at start-up

        line = html.unescape(line)
    if not line.isascii():
        line = line.translate(_CLEAN)
    if "        " in line:
        line = _WRAP_PADDING.sub("", line)
    if "`" in line or ">" in line[:3]:
        line = _MARKDOWN.sub("", line)
    return line


def anatomize(number: int, raw: str) -> Line:
    """Take a physical line apart: its prefixes, what they tell, and the text after them (in
    Rust where it is built and allowed, see `line_reader`)."""
    return line_reader()(number, raw)


def line_reader(native: bool | None = None) -> Callable[[int, str], Line]:
    """`anatomize`, decided once: the Rust reader where it is built and allowed
    (`native_for(native)`), which hands each line it declines to Python's; else Python's."""
    reader = _native_anatomy() if native_for(native) else None
    return _anatomize_python if reader is None else reader.read


def native_reader() -> Anatomy[Line] | None:
    """The Rust reader `line_reader` gives where it is built and allowed (the first pass reads
    with it the lines it hands back, logs/firstpass.py), or None."""
    return _native_anatomy()


@cache
def _native_anatomy() -> Anatomy[Line] | None:
    """The Rust reader made of the shapes above (and servers.py's), or None: not built, or a
    pattern it cannot translate exactly (then Python reads every line)."""
    patterns = anatomy_patterns()
    if not native_for(True) or patterns is None:
        return None
    try:
        return new_anatomy(
            **patterns,
            path_server=path_server,
            fallback=_anatomize_python,
            line=Line,
        )
    except ValueError:
        return None


def anatomy_patterns() -> dict[str, Any] | None:
    """The patterns (and names) the Rust readers of a line's anatomy are made of
    (`_native_anatomy`, logs/firstpass.py), or None where one has flags Rust does not take."""
    servers, server_groups = server_shapes()
    gutter = (_GUTTER_SEPARATOR, _GUTTER_GROUP_HEAD, _GUTTER)
    patterns = (
        _ANY_PREFIX_READ,
        _MONTH_DAY_RECORD,
        _KEY_PID,
        _HTML_ENTITY,
        FRAME,
        servers,
        *gutter,
    )
    if any(p.flags for p in patterns):
        return None
    return {
        "prefixes": _ANY_PREFIX_READ.pattern,
        "shapes": _shape_names(),
        "never": "".join(sorted(_NEVER_PREFIX)),
        "month_day": _MONTH_DAY_RECORD.pattern,
        "month_day_server": _MONTH_DAY_SERVER,
        "key_pid": _KEY_PID.pattern,
        "entity": _HTML_ENTITY.pattern,
        "frame": FRAME.pattern,
        "frame_path": "path",
        "frame_start": FRAME_START,
        "servers": servers.pattern,
        "server_groups": server_groups,
        "gutter": [p.pattern for p in gutter],
    }


def native_counts() -> tuple[int, int] | None:
    """(lines the Rust reader read, lines it handed to Python) in this process, or None when
    it is not made."""
    reader = _native_anatomy() if _native_anatomy.cache_info().currsize else None
    return None if reader is None else reader.counts()


def _anatomize_python(number: int, raw: str) -> Line:
    """`anatomize` in Python: the lines Rust declines, and every line without it."""
    line = _clean(raw)
    keys: list[str] = []
    timestamp: str | None = None
    pid: int | None = None
    evidence = _server_evidence(line)
    position = 0
    if line[:1].isspace():  # an indented paste: the prefix may follow the indentation
        indent = len(line) - len(line.lstrip())
        if _ANY_PREFIX_READ.match(line[indent:]) and not line.startswith(FRAME_START, indent):
            position = indent
    for _ in range(4):
        rest = line[position:]  # the shapes are anchored (`^`): match from its start
        if not rest or rest[0] in _NEVER_PREFIX:
            break
        match = _ANY_PREFIX_READ.match(rest)
        if match is None or match.lastindex is None:
            break
        key_group, ts_group, pid_group = _shape_groups()[match.lastindex]
        if evidence is None and _MONTH_DAY_RECORD.match(rest):
            evidence = _MONTH_DAY_SERVER
        if key_group is not None and match.group(key_group):
            keys.append(match.group(key_group))
        if ts_group is not None and _replaces(match.group(ts_group), timestamp):
            timestamp = match.group(ts_group)
        if pid is None and pid_group is not None and match.group(pid_group):
            pid = int(match.group(pid_group))
        position += match.end()
    prefix, rest = line[:position], line[position:]
    text, gutter = _strip_gutter(rest)
    if pid is None and keys:
        found = _KEY_PID.search(keys[0])
        if found is not None:
            pid = int(found.group(1) or found.group(2))
    return Line(
        number,
        raw.rstrip("\r\n"),
        " ".join(keys),
        prefix,
        rest,
        text.strip(),
        timestamp,
        pid,
        gutter,
        evidence,
    )


_KEY_PID = Pattern(r"pid=(\d+)|\[(\d+)\]")


def _replaces(time: str | None, kept: str | None) -> bool:
    """Whether a prefix's time is the line's, over the time `kept` from a prefix before it: the
    first time read is, unless it has no year and this one is a full date (journald's `Dec 11
    09:59:30` before Ollama's `time=2024-12-11T09:59:30.186Z`), as in a line's own stamp."""
    if not time:
        return False
    return kept is None or (not dated(kept) and dated(time))


def anatomize_reference(number: int, raw: str) -> Line:
    """`anatomize` as first written, one regex per step: the reference it is tested equal to."""
    line = _clean(raw)
    keys: list[str] = []
    timestamp: str | None = None
    pid: int | None = None
    evidence = _server_evidence(line)
    position = 0
    if line[:1].isspace():  # an indented paste: the prefix may follow the indentation
        indent = len(line) - len(line.lstrip())
        if _ANY_PREFIX.match(line[indent:]) and not line.startswith(FRAME_START, indent):
            position = indent
    for _ in range(4):
        rest = line[position:]
        found = None if not rest or rest[0] in _NEVER_PREFIX else _ANY_PREFIX.match(rest)
        if found is None or found.lastindex is None:
            break
        match = _PREFIXES[found.lastindex - 1].match(rest)  # again, for its named groups
        if match is None:
            break
        if evidence is None and _MONTH_DAY_RECORD.match(rest):
            evidence = _MONTH_DAY_SERVER
        groups = match.groupdict()
        if groups.get("key"):
            keys.append(groups["key"])
        if _replaces(groups.get("ts"), timestamp):
            timestamp = groups["ts"]
        if pid is None and groups.get("pid"):
            pid = int(groups["pid"])
        position += match.end()
    prefix, rest = line[:position], line[position:]
    text, gutter = _strip_gutter_reference(rest)
    if pid is None and keys:
        found = re.search(r"pid=(\d+)|\[(\d+)\]", keys[0])
        if found is not None:
            pid = int(found.group(1) or found.group(2))
    return Line(
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


# Exception groups draw their sub-tracebacks inside `|` gutters, between `+-` separators.
_GUTTER_SEPARATOR = Pattern(r"^\s*\+-")
_GUTTER_GROUP_HEAD = Pattern(r"^\s*\+ (?=Exception Group Traceback)")
# Bars, each followed by a blank or the end (`^(?:\s*\|(?=\s|$))+` as first written), with
# its one lookahead at the end, where the Rust reader translates it exactly
_GUTTER = Pattern(r"^\s*\|(?:\s+\|)*(?=\s|$)")


def _strip_gutter(rest: str) -> tuple[str, bool]:
    """The text inside an exception group's `| ` gutters, and whether there were any."""
    if "|" not in rest and "+" not in rest:
        return rest, False  # each gutter shape holds one of them
    return _strip_gutter_reference(rest)


def _strip_gutter_reference(rest: str) -> tuple[str, bool]:
    """`_strip_gutter` without the quick refusal: the reference it is tested equal to."""
    if _GUTTER_SEPARATOR.match(rest):
        return "", True
    text = rest
    head = _GUTTER_GROUP_HEAD.match(text)
    if head is not None:
        text = text[head.end() :]
    bars = _GUTTER.match(text)
    if bars is not None:
        return text[bars.end() :], True
    return text, False


def _server_evidence(line: str) -> Server | None:
    """The server a line shows: by the package path of a frame in it, else by its words."""
    frame = FRAME.search(line.replace("|", " ").strip()) if _FRAME_QUOTED in line else None
    if frame is not None:
        return path_server(frame["path"])
    return text_server(line)


def cut_marker(line: Line) -> bool:
    """Whether `line` marks a cut in an excerpt (an elision, grep's `--`): a line of no log
    record (no prefix) that stands for lines left out."""
    return not line.prefix and _ELISION.match(line.text) is not None


def structural(text: str) -> bool:
    """A traceback line that is never part of an error message."""
    return bool(
        TRACEBACK_START.match(text)
        or CHAIN.match(text)
        or FRAME.match(text)
        or (text and CARETS.match(text))
        or _ELISION.match(text)
    )
