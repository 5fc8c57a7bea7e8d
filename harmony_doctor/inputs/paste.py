"""A pasted text -> its furniture undone and its pieces typed, before anything is detected.

People paste what they saw: Markdown (`> ` quotes, fenced blocks inside prose, inline code,
tables whose pipes are escaped as `<\\|constrain\\|>`), CI logs (GitHub Actions and GitLab
stamps, `##[error]`, Buildkite's `[...Z]`), pytest's `E   ` lines, tracebacks with a blank line
after every line or flattened onto one line (`\\n` written out), and code that holds token ids
(`generated_tokens = [200005, ...]`). `read_paste` undoes the furniture line by line, keeping
every line's place in the input (`Paste.source`), and says what each piece is: a fenced block, a
paragraph of Harmony markup, an inline span, an id list in code, prose, a caption. The readers
after it judge each piece by what it is: an error message anywhere is explained, only a piece
that is a completion is replayed, and prose never becomes a header.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final, Literal

from harmony_doctor import specials
from harmony_doctor.harmony.vocab import NAMED_SPECIALS, VOCAB_SIZE
from harmony_doctor.lazy_regex import Pattern

PieceKind = Literal["block", "paragraph", "inline", "ids"]
Shape = Literal[
    "fence",
    "quote",
    "table",
    "escapes",
    "ci",
    "pytest",
    "blank-lines",
    "flattened",
    "prose",
    "caption",
    "code",
]

# Larger inputs are logs, read as given: a paste is what fits in an issue or a chat message.
MAX_PASTE: Final = 4 * 1024 * 1024
# The first characters of the lines a CI log or pytest prefixes (the checks are skipped
# for every other line).
_PREFIX_STARTS: Final = frozenset("[_#\x1bsE0123456789")
_FENCE = Pattern(r"^\s{0,3}(?:>\s?)*(`{3,}|~{3,})\s*([\w.+-]*)")
_QUOTE = Pattern(r"^\s{0,3}(?:>[ \t]?)+")
_CI_STAMP: Final = Pattern(
    r"^(?:_bk;t=\d+\x07)?"  # Buildkite's timing marker
    r"(?:\[\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z\]\s?"  # Buildkite `[2025-...Z] `
    r"|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{5,}Z\s(?:\d\d[OE]\+?\s)?)"  # GitHub Actions, GitLab
)
_CI_COMMAND = Pattern(r"^##\[(?:error|warning|notice|debug|group|endgroup|command)\]\s?")
_GITLAB_SECTION = Pattern(r"^(?:\x1b\[0K)?section_(?:start|end):\d+:[\w.-]+\r?(?:\x1b\[0K)?")
_PYTEST_E = Pattern(r"^E(?: {2,}|\t)")
_ESCAPED_MARKUP = Pattern(r"<\\\|([\w.]+)\\\|>")
_ESCAPED_TICK = Pattern(r"\\`")
_TABLE_ROW = Pattern(r"^\s*\|.*\|\s*$")
_TABLE_RULE = Pattern(r"^\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?\s*$")
_CELL_SPLIT = Pattern(r"(?<!\\)\|")
_INLINE = Pattern(r"(?<![`\\])(`+)(?!`)(.+?)(?<!`)\1(?!`)")
# Tracebacks and log records: what makes a stretch of text a log rather than prose.
_LOG_LINE = Pattern(
    r"^\s*(?:Traceback \(most recent call last\)|File \"|[\w.]+(?:Error|Exception)\b:?"
    r"|\(\w+ pid=\d+\)|\[?\d{4}-\d\d-\d\d[ T]\d\d:\d\d|(?:INFO|WARNING|WARN|ERROR|DEBUG)\b"
    r"|\d\d-\d\d \d\d:\d\d:\d\d|time=\S+ level=|srv\s|slot\s|[A-Z][a-z]{2} [ \d]\d \d\d:)"
)
# A log record's start as servers write it: a stamp, a process tag, a level and a stamp.
_RECORD_START = Pattern(
    r"^\s*(?:\[?\d{4}-\d\d-\d\d[ T]\d\d:\d\d|\(\w+ pid=\d+\)|time=\S+ level="
    r"|(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL)\s+\d\d-\d\d \d\d:"
    r"|[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:"
    # Python's logging and uvicorn (`INFO:     `, `ERROR:root:`), a bracketed level or source
    # tag (`[INFO] `, `[serving_chat.py:1001] `), a compose service (`vllm-1  | `)
    r"|(?:TRACE|DEBUG|INFO|NOTICE|WARNING|WARN|ERROR|CRITICAL|FATAL):(?:[\w.]+:|\s)"
    r"|\[(?:TRACE|DEBUG|INFO|NOTICE|WARNING|WARN|ERROR|CRITICAL|FATAL)\]\s|\[[\w.-]+\.py:\d+\]\s"
    r"|[A-Za-z0-9][\w.-]*[-_]\d+\s+\|\s"
    # llama-server's module and function tags (`srv  update_chat_: `, `slot launch_slot_: `)
    r"|(?:srv|slot|que|res)\s+[\w()~]+:\s)"
)
# An issue's title tagged in brackets (`[Bug]: ...`, `[Feature] ...`): words, not a JSON array.
_TAGGED_TITLE: Final = Pattern(r"\[[A-Za-z][\w -]*\]:?\s+[A-Za-z]")
_FLAT_BREAK = Pattern(r"(?<!\\)\\n")
_WORD = Pattern(r"[^\W\d_]{2,}")
_CAPTION = Pattern(r"^\s*(?:#{1,6}\s|[-*+]\s|\d+[.)]\s|\*\*[^*]+\*\*:?\s*$|.*:\s*$)")
# An id list held by a name in code or a `key: value` block: `generated_tokens = [200005, ...`.
_NAMED_IDS = Pattern(
    r"(?P<name>[A-Za-z_][\w.]*)[\"']?\s*[:=]\s*[\[(]\s*(?P<ids>\d+(?:\s*,\s*\d+){2,})\s*,?\s*[\])]?"
)
_PROMPT_NAME = Pattern(r"prompt|input|request", re.I)
_SPECIAL_ID = Pattern(r"\b2000(?:0\d|1[0-8])\b")
_MARKUP = Pattern(specials.ANY)
# A paragraph, not a label, whatever it opens or ends with: this many words or more (a list
# item that explains, a paragraph that ends by introducing a block). A caption is a line or two.
_PARAGRAPH_WORDS = 25
_STOP = Pattern(specials.STOP)
# An elision a person typed: the text was cut there, not by the model.
_ELIDED = Pattern(r"(?:\.{3}|…)\s*[\])}\"'`]*\s*$")


@dataclass(frozen=True)
class Piece:
    """A part of a paste that may be a completion: replayed only by what it is."""

    kind: PieceKind
    text: str
    line: int  # 1-based line of the input where it starts
    elided: bool = False  # a person cut it short (`...`, `…`): where it stops says nothing
    spread: bool = False  # its markup is laid out over lines by a person (an illustration)
    labelled: bool = False  # a label on its first line calls it what came back (`output :`)


@dataclass(frozen=True)
class Paste:
    """A text with its paste furniture undone.

    `text` holds the input's lines unquoted (a flattened line becomes several, a table row one
    line per cell); `source[i]` is the input line of line i + 1 of `text` (empty: every line
    is where it was). `shapes` says what was undone (empty: the input is read as given).
    `prose` and `captions` count the lines of prose and of captions (headings, list items,
    lines ending in a colon) outside blocks.
    """

    text: str
    source: tuple[int, ...]
    shapes: frozenset[Shape]
    pieces: tuple[Piece, ...] = ()
    prose: int = 0
    captions: int = 0

    def source_line(self, line: int) -> int:
        """The input line where line `line` (1-based) of `text` comes from."""
        if 1 <= line <= len(self.source):
            return self.source[line - 1]
        return line

    @property
    def furnished(self) -> bool:
        """Whether anything was undone or found around the text (it is not a bare input)."""
        return bool(self.shapes)


def read_paste(text: str) -> Paste:
    """`text` with its paste furniture undone, and its pieces; see the module docstring."""
    if len(text) > MAX_PASTE:
        return Paste(text, (), frozenset())  # a log too large to be a paste: as given
    raw = text.split("\n")
    first = next((line.strip() for line in raw if line.strip()), "")
    if (
        first.startswith(("<|", "{", "[", "data:"))
        and not _CI_STAMP.match(first)
        and not _TAGGED_TITLE.match(first)
    ):
        return Paste(text, (), frozenset())  # a completion, JSON, SSE: as given
    lines: list[str] = []
    source: list[int] = []
    shapes: set[Shape] = set()
    fenced: list[bool] = []
    blocks: list[tuple[int, int, str]] = []  # (first, last) index into `lines`, language
    fence: tuple[str, int, str] | None = None
    rules: set[int] = set()  # lines that were fences: furniture, not blank lines
    for number, line in enumerate(raw, start=1):
        marker = _FENCE.match(line) if "``" in line or "~~" in line else None
        if marker is not None and (fence is None or marker.group(1)[0] == fence[0][0]):
            shapes.add("fence")
            if _QUOTE.match(line):
                shapes.add("quote")
            if fence is None:
                fence = (marker.group(1), len(lines) + 1, marker.group(2))
            else:
                blocks.append((fence[1], len(lines) - 1, fence[2]))
                fence = None
            lines.append("")
            source.append(number)
            fenced.append(False)
            rules.add(len(lines) - 1)
            continue
        parts = _unquote(line, shapes, inside=fence is not None)
        if parts is None:  # a table's rule: the row above it is the table's header
            for index in range(len(lines) - 1, -1, -1):
                if source[index] != number - 1:
                    break
                lines[index] = ""
            parts = [""]
        for part in parts:
            lines.append(part)
            source.append(number)
            fenced.append(fence is not None)
    if fence is not None:  # a fence left open: the paste was cut inside it
        blocks.append((fence[1], len(lines) - 1, fence[2]))
    lines, source, fenced, blocks = _undouble(lines, source, fenced, blocks, shapes, rules)
    pieces = [_block_piece(lines, source, first, last) for first, last, _ in blocks]
    if _SPECIAL_ID.search(text):
        pieces += _id_pieces(lines, source)
    prose = captions = 0
    if pieces or "<|" in text:  # words around a piece decide what it is: count them
        outside: list[tuple[int, str]] = []
        for index, line in enumerate(lines):
            if fenced[index] or not line.strip():
                outside.append((index, ""))
                continue
            outside.append((index, line))
            kind = _line_kind(line)
            prose += kind == "prose"
            captions += kind == "caption"
        if "<|" in text:
            pieces += _paragraph_pieces(outside, source)
            for index, line in enumerate(lines):
                if not fenced[index] and "`" in line:
                    pieces += _inline_pieces(line, source[index])
    if any(p.kind == "ids" for p in pieces):
        shapes.add("code")  # ids a name holds in code or a repro block: a completion
    if _MARKUP.search(text):  # words around markup: the whole is never replayed
        if prose:
            shapes.add("prose")  # only pieces are, as fragments
        elif captions:
            shapes.add("caption")  # a piece under a caption is the paste
    ordered = tuple(sorted((p for p in pieces if p.text.strip()), key=lambda p: p.line))
    if (
        shapes <= {"prose", "caption", "code"}
        and _STOP.search(_INLINE.sub(" ", text))
        and not any(_LABEL.match(line) for line in lines if "<|" in line)  # `output : <|...`
        and not _stops_named(_INLINE.sub(" ", text))
        and not _paragraphs_before(text)
    ):
        shapes = set()  # a stop token outside quoting: a completion that opens with text
    if not shapes:
        return Paste(text, (), frozenset(), ordered, 0, captions)
    return Paste("\n".join(lines), tuple(source), frozenset(shapes), ordered, prose, captions)


# What follows a stop token a sentence names (`anything after <|end|> isn't visible`): words, up
# to the line's end or the next markup, that are no header a model would write after it.
_AFTER_STOP: Final = Pattern(specials.STOP + r"([^<\n]*)")
_HEADER_WORDS: Final = Pattern(r"\W*(?:assistant|analysis|commentary|final|user|to=)", re.I)


def _paragraphs_before(text: str) -> bool:
    """Paragraphs of prose before any markup (words, a blank line, words): an article or a
    report that goes on to show markup, never a completion, which opens with its text and
    runs on."""
    head = text[: max(text.find("<|"), 0)]
    return sum(1 for part in _BLANK_LINE.split(head) if _WORD.search(part)) >= 2


_BLANK_LINE: Final = Pattern(r"\n[^\S\n]*\n")


def _stops_named(text: str) -> bool:
    """Whether every stop token in `text` is named inside a sentence, words going on after it,
    not closing a message: prose about the format, not a completion."""
    after = [m.group(1) for m in _AFTER_STOP.finditer(text)]
    return bool(after) and all(
        len(_WORD.findall(rest)) >= 4 and not _HEADER_WORDS.match(rest) for rest in after
    )


def _unquote(line: str, shapes: set[Shape], inside: bool) -> list[str] | None:
    """One input line without its quoting, CI and pytest prefixes; a flattened line split;
    None for a table's rule (`|---|---|`)."""
    quote = _QUOTE.match(line) if ">" in line[:8] else None
    if quote is not None and not line.lstrip().startswith(">>>"):
        shapes.add("quote")
        line = line[quote.end() :]
    if line[:1] in _PREFIX_STARTS:
        for pattern, shape in (
            (_GITLAB_SECTION, "ci"),
            (_CI_STAMP, "ci"),
            (_CI_COMMAND, "ci"),
            (_PYTEST_E, "pytest"),
        ):
            found = pattern.match(line)
            if found is not None and found.end() > 0:
                shapes.add(shape)  # type: ignore[arg-type]
                line = line[found.end() :]
    if "|" not in line and "\\" not in line:
        return [line]  # the common line: nothing more to undo
    if not inside and _TABLE_ROW.match(line):
        shapes.add("table")
        if _TABLE_RULE.match(line):
            return None
        # Split on the table's own pipes, never on those of (unescaped) markup.
        kept = _KEEP_MARKUP.sub(lambda m: "\x00" + m.group(1) + "\x01", line.strip())
        cells = [_restore(c).strip() for c in _CELL_SPLIT.split(kept)[1:-1]]
        return [_unescape(c, shapes) for c in cells] or [""]
    if not inside and "|" in line and _TABLE_RULE.match(line):
        return None
    line = _unescape(line, shapes)
    parts = _FLAT_BREAK.split(line)
    if (
        len(parts) >= 3
        and not line.lstrip().startswith(("{", "[", '"', "'"))
        and any(_LOG_LINE.match(p) for p in parts[1:])
    ):
        shapes.add("flattened")
        return parts
    return [line]


_KEEP_MARKUP = Pattern(r"<\|(\w+)\|>")


def _restore(cell: str) -> str:
    return cell.replace("\x00", "<|").replace("\x01", "|>")


def _unescape(line: str, shapes: set[Shape]) -> str:
    """Markdown's escapes of pipes and backticks undone (`<\\|end\\|>` is `<|end|>`)."""
    if "\\|" not in line and "\\`" not in line:
        return line
    unescaped = _ESCAPED_TICK.sub("`", _ESCAPED_MARKUP.sub(r"<|\1|>", line)).replace("\\|", "|")
    if unescaped != line:
        shapes.add("escapes")
    return unescaped


def _undouble(
    lines: list[str],
    source: list[int],
    fenced: list[bool],
    blocks: list[tuple[int, int, str]],
    shapes: set[Shape],
    rules: set[int],
) -> tuple[list[str], list[int], list[bool], list[tuple[int, int, str]]]:
    """A log pasted with a blank line after every line, the blank lines dropped (a fence
    line is neither text nor a blank line: gaps across one are not looked at)."""
    filled = [i for i, line in enumerate(lines) if line.strip()]
    gaps = [b - a for a, b in itertools.pairwise(filled) if not any(a < r < b for r in rules)]
    if len(gaps) < 2 or any(gap != 2 for gap in gaps):
        return lines, source, fenced, blocks
    if not any(_LOG_LINE.match(lines[i]) for i in filled):
        return lines, source, fenced, blocks
    shapes.add("blank-lines")
    keep = [
        i
        for i in range(len(lines))
        if lines[i].strip() or i in rules or i < filled[0] or i > filled[-1]
    ]
    where = {old: new for new, old in enumerate(keep)}

    def moved(index: int) -> int:
        while index not in where and index > 0:
            index -= 1
        return where.get(index, 0)

    kept_blocks = [(moved(first), moved(last), lang) for first, last, lang in blocks]
    return (
        [lines[i] for i in keep],
        [source[i] for i in keep],
        [fenced[i] for i in keep],
        kept_blocks,
    )


def _block_piece(lines: list[str], source: list[int], first: int, last: int) -> Piece:
    body = "\n".join(lines[first : last + 1]) if last >= first else ""
    line = source[first] if first < len(source) else source[-1] if source else 1
    return Piece(
        "block", _unlaid(body), line, elided=bool(_ELIDED.search(body)), spread=_spread(body)
    )


# A label a person writes before markup on the same line: of what came back
# (`output : <|channel|>...`), or of anything else (`input:`, `adapter:`, `expected:`), which
# says the markup is one of several things set side by side, not what came back.
_LABEL: Final = Pattern(
    r"^\s*[*_]{0,2}(?:(?P<back>output|response|reply|answer|result|got)|[A-Za-z][\w .-]{0,24})"
    r"[*_]{0,2}\s*:\s*[*_]{0,2}\s*(?=<\|)",
    re.I,
)


# A line that opens by defining a special token, as a glossary does (`<|channel|> - means the
# model switched channel`, `` `<|end|>`: ends a message ``): a token followed by blanks, then a
# dash, a colon or a defining verb. A model writes no blank after a token but <|message|> (its
# body may open with anything): a channel, a role, `json` or the next token follows at once.
DEFINES: Final = Pattern(
    r"^\s*(?:[-*+]\s+)?[`*_\"']*<\|(?!message\|)[a-z_]+\|>[`*_\"']*\s*"
    r"(?:[-\u2013\u2014:=]|(?:means|is|marks|indicates|denotes|signals)\b)\s",
    re.I,
)


def _paragraph_pieces(outside: list[tuple[int, str]], source: list[int]) -> list[Piece]:
    """Paragraphs outside blocks that open with Harmony markup, or with a label of what came
    back before it (`output : <|channel|>...`): output shown as it came. A label on a line
    ends the paragraph above it; markup labelled as anything else is no piece."""
    pieces: list[Piece] = []
    current: list[str] = []
    start = 0
    labelled = False
    for index, line in [*outside, (len(outside), "")]:
        label = _LABEL.match(line) if line.strip() else None
        if current and (not line.strip() or label is not None):
            if start >= 0:
                pieces.append(_paragraph(current, source[start], labelled))
            current = []
        if not line.strip():
            continue
        if not current:
            if label is None and (not line.lstrip().startswith("<|") or DEFINES.match(line)):
                continue  # no markup opens it, or a sentence defining a token does
            start, labelled = index, label is not None
            if label is not None and label["back"] is None:
                start = -1  # labelled as something else: not a piece
            line = line if label is None else line[label.end() :]
        current.append(line)
    return pieces


def _paragraph(lines: list[str], line: int, labelled: bool) -> Piece:
    body = "\n".join(lines)
    return Piece(
        "paragraph",
        _unlaid(body),
        line,
        elided=bool(_ELIDED.search(body)),
        spread=_spread(body),
        labelled=labelled,
    )


# The end of an id list a person glosses with its decoding: `[200005, 35644, ...]` = `...`.
_GLOSSED: Final = Pattern(r"[\])]`?\s*(?:=|->|→|means)\s*$")


def _inline_pieces(line: str, number: int) -> list[Piece]:
    """Inline code spans that hold Harmony markup (a quoted example, or output quoted); not
    the decoding a person writes beside ids (the ids are the output, and are read as such)."""
    return [
        Piece("inline", m.group(2), number, elided=bool(_ELIDED.search(m.group(2))))
        for m in _INLINE.finditer(line)
        if "<|message|>" in m.group(2)
        and m.group(2).lstrip().startswith("<|")
        and not _KEEP_MARKUP.fullmatch(m.group(2).strip())  # one token named, not output
        and not _GLOSSED.search(line, 0, m.start())
    ]


# Harmony's own special tokens (<|start|>, <|channel|>, <|message|>, <|end|>...), by id.
_HARMONY: Final = frozenset(t for t, name in NAMED_SPECIALS.items() if "reserved" not in name)
# A line about a tokenizer's special tokens: their ids listed, not a stream.
LISTS_SPECIALS: Final = Pattern(
    r"\b(?:eos|bos|pad|stop|eog|special|control)[ _-]?(?:token|id)s?\b|\bEOG\b|added_tokens"
    r"|stop_token_ids|\btokenizer\.|llama_model_loader|print_info:",
    re.I,
)


def harmony_run(ids: tuple[int, ...], least: int) -> bool:
    """Ids of `o200k_harmony` that may be a stream: at least `least` of them, Harmony's special
    tokens among ordinary ones (a list of special tokens alone is a stop list or a listing)."""
    if len(ids) < least or any(i >= VOCAB_SIZE for i in ids):
        return False
    specials = sum(1 for i in ids if i in _HARMONY)
    return 0 < specials < len(ids)


def _id_pieces(lines: list[str], source: list[int]) -> list[Piece]:
    """Id lists a name holds in code or a repro block, when they may be a stream (not a
    tokenizer's listing of its special tokens)."""
    pieces: list[Piece] = []
    for index, line in enumerate(lines):
        if not _SPECIAL_ID.search(line) or LISTS_SPECIALS.search(line):
            continue
        for found in _NAMED_IDS.finditer(line):
            if _PROMPT_NAME.search(found.group("name")) or not _SPECIAL_ID.search(found["ids"]):
                continue
            if not harmony_run(tuple(map(int, re.findall(r"\d+", found["ids"]))), 3):
                continue
            ids = re.sub(r"\s+", " ", found.group("ids"))
            pieces.append(Piece("ids", f"[{ids}]", source[index]))
    return pieces


def lines_of(text: str, piece: int = 1024 * 1024) -> Iterator[str]:
    """`text.split("\n")`, one line at a time: a large text is never held twice (its lines
    as a list), only about `piece` characters of it at a time."""
    start = 0
    while True:
        end = text.find("\n", start + piece)
        if end < 0:
            yield from text[start:].split("\n")
            return
        yield from text[start:end].split("\n")
        start = end + 1


def opens_as_log(text: str) -> bool:
    """Whether `text` opens with a log record (a stamp, a process tag): a log that may quote
    markup, never a completion, which opens with markup or the model's own text."""
    first = next((line for line in lines_of(text) if line.strip()), "")
    return _RECORD_START.match(first) is not None


# Markup a person laid out or annotated: a header broken across lines, a note after a message
# (`<|end|>   ← reasoning`).
_LAID_OUT: Final = Pattern(
    r"<\|(?:start|channel)\|>[^<]*\n\s*<\|(?:constrain|message)\|>"
    r"|" + specials.STOP + r"[^\S\n]*(?:←|<-+|#|//)[^\n]*\n\s*<\|start\|>"
)
# One message a line: the line break a person put between a stop token and the next <|start|>
# (a model writes none there; what it does write there is read from its ids).
_ONE_A_LINE: Final = Pattern(rf"({specials.STOP})[^\S\n]*\r?\n\s*(?=<\|start\|>)")


# The stop token of a message begun above a paragraph (a message of several paragraphs).
_CLOSES_ABOVE: Final = Pattern(rf"^\s*(?:{specials.STOP})+(?=\s*<\|start\|>)")


def _unlaid(body: str) -> str:
    """A piece's markup without the line breaks a person put between its messages, and without
    the stop token of a message that began above it."""
    body = _CLOSES_ABOVE.sub("", body)
    return _ONE_A_LINE.sub(r"\1", body) if "|>\n" in body or "|>\r\n" in body else body


def _spread(body: str) -> bool:
    """Markup a person laid out or annotated (`_LAID_OUT`): an illustration, not output."""
    return _LAID_OUT.search(body) is not None


def _line_kind(line: str) -> Literal["prose", "caption", "other"]:
    """Prose (sentences), a caption (heading, list item, a line ending in a colon), or other
    (log records, code, markup, short fragments)."""
    stripped = line.strip()
    if DEFINES.match(stripped):
        return "prose"  # a glossary's sentence, whatever token it opens with
    if _LOG_LINE.match(stripped) or stripped.startswith(("<|", "{", "[", "}", "]", '"')):
        return "other"
    outside_code = _INLINE.sub(" ", stripped)
    words = len(_WORD.findall(outside_code))
    if _CAPTION.match(stripped) and words < _PARAGRAPH_WORDS:
        return "caption"
    if "<|" in outside_code and len(_WORD.findall(_MARKUP.sub(" ", outside_code))) < 4:
        return "other"
    return "prose" if words >= 4 else "other"
