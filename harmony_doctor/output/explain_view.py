"""`explain` for people: a token stream's findings in context, and failures found in log text.

A log's view is made of lines of text, separators and grids of labelled facts (`_log_parts`),
drawn by rich (`log_explain_view`) or, off a terminal, written as the plain lines rich writes
there without loading rich (`log_explain_plain`; tests/cli/test_explain_startup.py holds the
two equal on every sample and paste)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from harmony_doctor.faults.rules import RULES
from harmony_doctor.harmony.vocab import FIRST_SPECIAL, special_token_name
from harmony_doctor.inputs.text_lines import bounded
from harmony_doctor.output.escape import safe_text, shorten, unsafe
from harmony_doctor.output.layout import (
    SEPARATOR_WIDTH,
    UNLIMITED,
    Fitted,
    capped,
    facts_grid,
    header_summary,
    separator,
)
from harmony_doctor.output.styles import DIM, ERROR, LABEL, OK, SPECIAL, WARNING

if TYPE_CHECKING:  # rich loads where a view is drawn, not where it is written plain
    from rich.console import RenderableType
    from rich.table import Table
    from rich.text import Text

    from harmony_doctor.evidence.prose import Description
    from harmony_doctor.explain import LogExplanation
    from harmony_doctor.harmony.vocab import Vocab
    from harmony_doctor.models import Diagnosis, Finding, LogError, Message


def _cut(value: str, limit: int, elide: bool) -> str:
    """`value` cut to `limit` characters on a terminal, whole otherwise."""
    return shorten(value, limit) if elide else value


# A header a log carries may be any length (a model writing prose into it: 300 KB); where it
# is echoed (the message, the words, the header rebuilt, what was found) it is bounded even
# off a terminal: its head and tail, with how much is left out between them.
HEADER_ECHO = 2_000
HEADER_WORD = 200


def _echo(value: str, limit: int, elide: bool, cut: int = 0) -> str:
    """A text that holds a log's header: `_cut` on a terminal, else bounded (`bounded`; `cut`:
    the characters left out of it already)."""
    return shorten(value, limit) if elide else bounded(value, HEADER_ECHO, cut)


# --- token streams ---------------------------------------------------------------------------


def explain_view(
    d: Diagnosis, source: str, vocab: Vocab, window: int = 6, elide: bool = True
) -> RenderableType:
    """One token stream: each finding with its token window, then the messages and a count.

    `elide`: cut long texts in the middle (a terminal); off, every text is shown whole (a
    pipe or a file: nothing the reader may need is replaced by `…`)."""
    from rich.console import Group
    from rich.text import Text

    parts: list[RenderableType] = [_input_line(d, source)]
    parts.extend(Text(f"note: {n}", style=WARNING) for n in d.input.notes)
    if d.verdict == "ok" and not d.findings:
        parts.append(Text.assemble(("OK", OK), "  openai-harmony parses the stream cleanly."))
    for finding in d.findings:
        parts.append(separator())
        parts.append(_finding_view(finding, d.input.tokens, vocab, window, elide))
    parts.extend(
        Text.assemble(("replay disagrees: ", ERROR), safe_text(note)) for note in d.disagreements
    )
    parts.append(separator())
    parts.append(_messages_view(d.replay.messages, d.verdict, vocab, d.input.tokens, elide))
    parts.append(_lenient_view(d, elide))
    parts.append(_text(_summary(f.severity for f in d.findings)))
    return Group(*parts)


def _input_line(d: Diagnosis, source: str) -> Text:
    from rich.text import Text

    inp = d.input
    bits = [source, inp.format]
    if inp.request_id:
        bits.append(f"request {inp.request_id}")
    bits.append(f"{len(inp.tokens)} tokens")
    if inp.finish_reason:
        bits.append(f"finish_reason {inp.finish_reason}")
    bits.append(f"role {d.replay.role}")
    bits.append("strict" if d.replay.strict else "lenient")
    line = Text("harmony-doctor explain  ", style=LABEL)
    line.append_text(safe_text(" · ".join(bits), DIM, keep_newlines=False))
    return line


def finding_head(severity: str, code: str, kind: str, title: str) -> Text:
    """`FAULT  HD101  header_leftover  Prose where a message header belongs`."""
    return _text(_head_line(severity, code, kind, title))


def _head_line(severity: str, code: str, kind: str, title: str) -> Line:
    is_error = severity == "error"
    return Line(
        "",
        (
            _said("FAULT " if is_error else "WARN  ", ERROR if is_error else WARNING),
            _said(f" {code} ", "reverse"),
            _said("  "),
            _said(kind, LABEL),
            _said("  "),
            _said(title),
        ),
    )


def _finding_view(
    f: Finding, tokens: Sequence[int], vocab: Vocab, window: int, elide: bool = True
) -> RenderableType:
    from rich.console import Group
    from rich.padding import Padding

    from harmony_doctor.output.tokens import token_ref, token_window

    head = finding_head(f.severity, f.code, f.kind, f.title)
    facts = facts_grid()
    if f.harmony_error is not None:
        facts.add_row(
            "openai-harmony", safe_text(_cut(f.harmony_error, 600, elide), keep_newlines=False)
        )
    if f.raise_index is not None:
        facts.add_row("raised at", token_ref(tokens, f.raise_index, vocab))
    if f.origin_index is not None:
        where = token_ref(tokens, f.origin_index, vocab)
        if f.raise_index is not None and f.origin_index < f.raise_index:
            where.append(f"  ({f.raise_index - f.origin_index} tokens before the raise)", DIM)
        facts.add_row("went wrong at" if f.severity == "error" else "at", where)
    facts.add_row("expected", safe_text(f.expected, keep_newlines=False))
    facts.add_row("found", safe_text(_cut(f.found, 400, elide), keep_newlines=False))
    if f.span is not None and f.kind != "markup_leak":
        header = vocab.decode(tokens[f.span[0] : f.span[1]])
        facts.add_row(
            f"header {f.span[0]}-{f.span[1]}",
            safe_text(repr(_echo(header, 300, elide)), keep_newlines=False),
        )
    return Group(
        head,
        Padding(facts, UNDER, expand=False),
        Padding(token_window(f, tokens, vocab, window), UNDER, expand=False),
        _drawn(_advice(f.cause, f.fix)),
    )


def _messages_view(
    messages: Sequence[Message],
    verdict: str,
    vocab: Vocab,
    tokens: Sequence[int],
    elide: bool = True,
) -> RenderableType:
    from rich.console import Group
    from rich.padding import Padding
    from rich.text import Text

    title = "Messages before the fault" if verdict == "fault" else "Messages"
    if not messages:
        return Text.assemble((title, LABEL), ": none")
    table = Fitted(lambda width: _message_table(messages, width, elide))
    return Group(Text(title, style=LABEL), Padding(table, (0, 0, 0, 2), expand=False))


def _message_table(messages: Iterable[Message], width: int | None, elide: bool = True) -> Table:
    from rich.table import Table

    table = Table(box=None, pad_edge=False, show_edge=False, header_style=DIM)
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("tokens", no_wrap=True)
    _header_and_content_columns(table, width, ["end"], fixed=32)  # #, tokens, end
    for m in messages:
        end = special_token_name(m.terminator) if m.terminator is not None else "(eos)"
        header = header_summary(m.role, m.channel, m.recipient, m.content_type)
        if m.recovered:
            header += " (lenient)"
        table.add_row(
            str(m.index),
            f"{m.header[0]}-{m.content[1]}",
            safe_text(header, keep_newlines=False),
            end,
            safe_text(_cut(m.text, 160, elide), keep_newlines=False),
        )
    return table


def _lenient_view(d: Diagnosis, elide: bool = True) -> RenderableType:
    from rich.console import Group
    from rich.padding import Padding
    from rich.text import Text

    title = Text("Lenient parse (strict=False)", style=LABEL)
    if not d.replay.strict:
        return Text.assemble(title, ": this run is lenient; see above")
    verdict = (
        Text.assemble(
            ("raises ", ERROR), safe_text(_cut(d.lenient_error, 200, elide), keep_newlines=False)
        )
        if d.lenient_error
        else Text("parses", style=OK)
    )
    line = Text.assemble(title, ": ", verdict, f", {len(d.lenient_messages)} message(s) recovered")
    rows: list[RenderableType] = [line]
    if d.lenient_messages:
        table = Fitted(lambda width: _lenient_table(d.lenient_messages, width, elide))
        rows.append(Padding(table, (0, 0, 0, 2), expand=False))
    return Group(*rows)


def _lenient_table(
    messages: Sequence[dict[str, Any]], width: int | None, elide: bool = True
) -> Table:
    from rich.table import Table

    table = Table(box=None, pad_edge=False, show_edge=False, header_style=DIM)
    table.add_column("#", justify="right", no_wrap=True)
    _header_and_content_columns(table, width, [], fixed=10)  # the # column
    for index, message in enumerate(messages):
        header = header_summary(
            message.get("name") or message.get("role"),
            message.get("channel"),
            message.get("recipient"),
            message.get("content_type"),
        )
        text = str(message.get("text", ""))
        table.add_row(
            str(index),
            safe_text(header, keep_newlines=False),
            safe_text(_cut(text, 160, elide), keep_newlines=False),
        )
    return table


def _header_and_content_columns(
    table: Table, width: int | None, between: list[str], fixed: int
) -> None:
    """A message table's header and content columns (with `between` columns in the middle):
    whole lines when the width is unlimited; on a terminal the header folds within a third of
    the width and the content gets what is left, cut with an ellipsis. `fixed`: the cells the
    table's other columns, gaps and indent take."""
    if width is None:
        table.add_column("header", no_wrap=True)
    else:
        header = capped(width, 0.35, 16, 44) or 16
        table.add_column("header", overflow="fold", max_width=header)
    for name in between:
        table.add_column(name, no_wrap=True)
    if width is None:
        table.add_column("content", no_wrap=True)
    else:
        room = max(12, width - header - fixed)
        table.add_column("content", no_wrap=True, overflow="ellipsis", max_width=room)


def _summary(severities: Iterable[str]) -> Line:
    """`2 error(s), 1 warning(s)`, styled by the worst."""
    seen = list(severities)
    errors = seen.count("error")
    warnings = len(seen) - errors
    style = ERROR if errors else WARNING if warnings else OK
    return Line(style, (_said(f"{errors} error(s), {warnings} warning(s)"),))


def _advice(cause: str, fix: str, refs: Sequence[str] = ()) -> Grid:
    """Why it happened and how to fix it, with the references when there are any."""
    rows: list[Row] = [("why", cause), ("fix", fix)]
    if refs:
        rows.append(("refs", ", ".join(refs)))
    return Grid("advice", tuple(rows))


# --- a view's parts, drawn by rich or written plain --------------------------------------------

# A piece of a line: its text, its style, and whether the text is untrusted (escaped by
# `safe_text` where rich draws it; never written plain when escaping would change it).
Piece = tuple[str, str, bool]


class Line(NamedTuple):
    """A line of text as rich's Text holds it: the style of the whole line, and its pieces."""

    style: str
    pieces: tuple[Piece, ...]


def _said(text: str, style: str = "") -> Piece:
    """A piece of the program's own words."""
    return (text, style, False)


def _quoted(text: str, style: str = "") -> Piece:
    """A piece of untrusted text (from the input)."""
    return (text, style, True)


# A grid's row: a label and its value (a Text only where rich built it: a token's text).
Row = tuple[str, "str | Line | Text"]


class Grid(NamedTuple):
    """Labelled rows, drawn under a blank line and indented (UNDER), the two columns GAP cells
    apart: `facts` (dim labels: layout's facts grid) or `advice` (bold labels)."""

    kind: Literal["facts", "advice"]
    rows: tuple[Row, ...]


UNDER = (1, 0, 0, 2)
GAP = 2  # the padding of layout.facts_grid, and of the advice's grid
# What a log's view is made of: a line, a separator, a grid, or what only rich draws (the table
# of replayed completions), built when drawn.
Part = Line | Literal["separator"] | Grid | Callable[[], "RenderableType"]


def _text(line: Line) -> Text:
    """A line as rich's Text, its untrusted pieces escaped."""
    from rich.text import Text

    text = Text(style=line.style)
    for piece, style, untrusted in line.pieces:
        if untrusted:
            text.append_text(safe_text(piece, style, keep_newlines=False))
        else:
            text.append(piece, style)
    return text


def _plain(line: Line) -> str | None:
    """A line's text, or None when rich would not write it as it is (a character escaped)."""
    if any(unsafe(piece) for piece, _, _ in line.pieces):
        return None
    return "".join(piece for piece, _, _ in line.pieces)


def _drawn_grid(grid: Grid) -> Table:
    kind, rows = grid
    if kind == "facts":
        table = facts_grid()
    else:
        from rich.table import Table

        table = Table.grid(padding=(0, GAP))
        table.add_column(style=LABEL, no_wrap=True)
        table.add_column()
    for label, value in rows:
        table.add_row(label, _text(value) if isinstance(value, Line) else value)
    return table


def _drawn(part: Part) -> RenderableType:
    """A part as rich draws it."""
    if isinstance(part, Line):
        return _text(part)
    if isinstance(part, Grid):
        from rich.padding import Padding

        return Padding(_drawn_grid(part), UNDER, expand=False)
    if part == "separator":
        return separator()
    return part()


def _written(parts: Iterable[Part]) -> str | None:
    """The lines rich writes of `parts` off a terminal (no colour, UNLIMITED width, each line's
    end stripped: cli/console.py `show`), or None when only rich can write them: a table, or a
    text rich would escape, break, fold or expand (an unsafe character, a newline or a tab in
    it, a line near the width)."""
    lines: list[str | None] = []
    for part in parts:
        if isinstance(part, Line):
            lines.append(_plain(part))
        elif isinstance(part, Grid):
            top, _, _, indent = UNDER
            width = max(len(label) for label, _ in part.rows)  # ASCII labels: a cell a character
            lines.extend([""] * top)
            for label, value in part.rows:
                shown = _plain(value) if isinstance(value, Line) else _unstyled(value)
                if shown is None:
                    return None
                lines.append(" " * indent + label.ljust(width) + " " * GAP + shown)
        elif part == "separator":
            lines.append("─" * SEPARATOR_WIDTH)
        else:
            return None
    written: list[str] = []
    for line in lines:  # a character takes at most two cells
        if line is None or "\n" in line or "\t" in line or 2 * len(line) >= UNLIMITED:
            return None
        written.append(line.rstrip() + "\n")
    return "".join(written)


def _unstyled(value: str | Text) -> str:
    return value if isinstance(value, str) else value.plain


# --- log text --------------------------------------------------------------------------------


def log_explain_view(
    found: LogExplanation, source: str, vocab: Vocab | None, elide: bool = True
) -> RenderableType:
    """One block per failure found in log text: what, where, the header words, why, the fix;
    then the completions the log carries as token ids, replayed (`elide`: see explain_view)."""
    from rich.console import Group

    return Group(*map(_drawn, _log_parts(found, source, vocab, elide)))


def log_explain_plain(found: LogExplanation, source: str, vocab: Vocab | None) -> str | None:
    """`log_explain_view` as rich writes it off a terminal (nothing elided), without loading
    rich's console and tables; None when only rich can write it (a table of completions)."""
    return _written(_log_parts(found, source, vocab, elide=False))


def _log_parts(found: LogExplanation, source: str, vocab: Vocab | None, elide: bool) -> list[Part]:
    errors = found.errors
    # Counted as the summary below counts: the log's failures and its replayed completions'.
    failures = len(errors) + sum(len(d.findings) for d in found.completions)
    bits = f"{source} · log · {found.lines} line(s) · {failures} failure(s)"
    head = Line(LABEL, (_said("harmony-doctor explain  "), _quoted(bits, DIM)))
    parts: list[Part] = [head]
    if not errors and not found.completions:
        parts.append(_nothing_found(found.related, found.note, found.described))
    for error in errors:
        parts.append("separator")
        parts.extend(_log_error_parts(error, vocab, elide))
    if found.completions:
        parts.append("separator")
        parts.append(partial(_completions_view, found.completions))
    parts.append("separator")
    severities = [e.severity for e in errors]
    severities += [f.severity for d in found.completions for f in d.findings]
    parts.append(_summary(severities))
    return parts


def _nothing_found(
    related: bool, note: str | None = None, described: Description | None = None
) -> Line:
    seen = f" Read as {note}." if note else ""
    if described is not None:  # a description: what it names, and what would show it
        said, style = "DESCRIBES", WARNING
        words = (
            f"  {described.what}: see `harmony-doctor rules {described.code}`. No failure to "
            f"diagnose in a description: paste {described.paste}."
        )
    elif related:
        said, style, words = "OK", OK, "  no Harmony failure found in this log." + seen
    else:
        said, style = "NOTHING HARMONY-RELATED", WARNING
        words = (
            "  no token ids, no Harmony text and no failure a server logs: paste a traceback, an "
            "error body, a log excerpt or the token ids." + seen
        )
    return Line("", (_said(said, style), _said(words)))


def _completions_view(completions: Sequence[Diagnosis]) -> RenderableType:
    """The completions a log carries as ids: one line each, with its verdict and first code."""
    from rich.console import Group
    from rich.padding import Padding
    from rich.table import Table
    from rich.text import Text

    faults = sum(1 for d in completions if d.findings)
    title = Text.assemble(
        ("Completions the log carries, replayed", LABEL),
        f": {len(completions)}, {faults} with a finding",
    )
    table = Table(box=None, pad_edge=False, show_edge=False, header_style=DIM)
    for name in ("request", "tokens", "verdict", "code", "finding"):
        table.add_column(name, no_wrap=name != "finding", overflow="fold")
    for d in completions:
        first = d.findings[0] if d.findings else None
        where = "" if first is None else _finding_place(first)
        table.add_row(
            safe_text(d.input.request_id or "-", keep_newlines=False),
            str(len(d.input.tokens)),
            Text(d.verdict, style=ERROR if d.verdict == "fault" else OK),
            first.code if first else "",
            Text(f"{first.title}{where}") if first else Text("—", DIM),
        )
    return Group(title, Padding(table, (0, 0, 0, 2), expand=False))


def _finding_place(f: Finding) -> str:
    bits = []
    if f.raise_index is not None:
        bits.append(f"raised at token {f.raise_index}")
    if f.origin_index is not None and f.origin_index != f.raise_index:
        bits.append(f"went wrong at token {f.origin_index}")
    return f" ({', '.join(bits)})" if bits else ""


def _log_error_parts(e: LogError, vocab: Vocab | None, elide: bool = True) -> list[Part]:
    """A failure's head, its facts and the advice of its code."""
    rule = RULES[e.code]  # the code's title, cause and fix, looked up here (not in the record)
    head = _head_line(e.severity, e.code, e.kind, rule.title)
    facts: list[Row] = []
    where = f"{e.line}" if e.span[0] == e.span[1] else f"{e.line} (lines {e.span[0]}-{e.span[1]})"
    facts.append(("line", where))
    origin = [
        e.server or "server unknown",
        f"openai-harmony {e.harmony_version}" if e.harmony_version else "",
        f"pid {e.pid}" if e.pid is not None else "",
        e.timestamp or "",
    ]
    facts.append(("seen in", _escaped(" · ".join(b for b in origin if b))))
    facts.append(("message", _escaped(_echo(e.message, 300, elide, e.message_cut))))
    if e.token is not None:
        facts.append(("token", _log_token(e.token, vocab)))
    if e.header_words:
        facts.append(("header words", _header_words(e, elide=elide)))
        if e.reconstructed:
            reconstructed = _echo(e.reconstructed, 300, elide, sum(e.words_cut))
            facts.append(("reconstructed", _escaped(reconstructed)))
    if e.context:
        facts.append(("context", _escaped(_echo(e.context, 300, elide))))
    facts.append(("expected", _escaped(e.expected)))
    facts.append(("found", _escaped(_echo(e.found, 400, elide))))
    return [head, Grid("facts", tuple(facts)), _advice(rule.cause, rule.fix, rule.refs)]


def _escaped(value: str) -> Line:
    """Untrusted text on one line (`safe_text(value, keep_newlines=False)` when drawn)."""
    return Line("", (_quoted(value),))


def names_need_vocab(errors: Iterable[LogError]) -> bool:
    """Whether `log_explain_view` needs the vocabulary to name the failures' tokens: an
    ordinary token's text is the vocabulary's; a special token is named from its id alone, as
    the vocabulary names it (`_log_token`)."""
    return any(e.token is not None and e.token < FIRST_SPECIAL for e in errors)


def _log_token(token: int, vocab: Vocab | None) -> Line | Text:
    """A token by its name (a special one: its id is enough) or, with the vocabulary, its text;
    then its id."""
    said = _said(f"  (id {token})", DIM)
    if vocab is None and token >= FIRST_SPECIAL:
        return Line(SPECIAL, (_said(special_token_name(token)), said))
    if vocab is None:
        return Line("", (_said("?"), said))
    from harmony_doctor.output.tokens import token_label

    label = token_label(token, vocab)
    label.append(*said[:2])
    return label


def _header_words(e: LogError, head: int = 24, tail: int = 8, elide: bool = True) -> Line:
    """The leftover words, long lists elided in the middle, the last word marked."""
    # each word with the characters a reader left out of its middle (logs/words.py MAX_WORD)
    words = list(zip(e.header_words, e.words_cut or [0] * len(e.header_words), strict=True))
    shown: list[tuple[str, int] | None] = list(words)
    if e.words_unread or (elide and len(words) > head + tail):
        if not elide:  # every word held, the unread ones marked where they were
            from harmony_doctor.logs.words import TAIL_WORDS

            head, tail = len(words) - TAIL_WORDS, TAIL_WORDS
        shown = [*words[:head], None, *words[-tail:]]
    out: list[Piece] = []
    for index, item in enumerate(shown):
        if index:
            out.append(_said(" "))
        if item is None:
            more = len(words) - head - tail
            out.append(_said(f"… {more + e.words_unread:,} more …", DIM))
            continue
        word = bounded(item[0], HEADER_WORD, item[1])
        out.append(_quoted(word, "underline" if index == len(shown) - 1 else ""))
    if e.words_unread:
        unread = f"  ({e.words_unread:,} words in the middle not read: over the bound)"
        out.append(_said(unread, WARNING))
    end = (
        "  ✂ the log cut the rest"
        if e.remainder_truncated
        else "  ◀ harmony took the 1-2 words after this as recipient and content type; "
        "the fault may sit there"
    )
    return Line("", (*out, _said(end, WARNING)))
