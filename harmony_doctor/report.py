"""Rich renderables for people, and the one escaping helper every untrusted string goes through."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from harmony_doctor.models import Diagnosis, Finding, Message
from harmony_doctor.vocab import Vocab, special_token_name

SPECIAL = "bold magenta"
ESCAPED = "bold red"
ERROR = "bold red"
WARNING = "bold yellow"
OK = "bold green"
DIM = "dim"
LABEL = "bold"
HEADER_SPAN = "on grey19"

# Control characters (C0 but tab/newline, DEL, C1) and bidi/invisible formatting characters.
_UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]")


def _escape_char(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def safe_text(value: str, style: str = "", *, keep_newlines: bool = True) -> Text:
    """Untrusted text as a rich Text: no markup, no emoji codes, control characters visible."""
    text = Text(style=style)
    position = 0
    for match in _UNSAFE.finditer(value):
        text.append(value[position : match.start()])
        text.append(_escape_char(match.group()), style=ESCAPED)
        position = match.end()
    rest = value[position:]
    if not keep_newlines:
        rest = rest.replace("\n", "\\n").replace("\t", "\\t")
    text.append(rest)
    if not keep_newlines:
        text = _escape_newlines(text)
    return text


def _escape_newlines(text: Text) -> Text:
    # Newline and tab escapes inside a one-line view, styled like other escapes.
    plain = text.plain
    for match in re.finditer(r"\\[nt]", plain):
        text.stylize(ESCAPED, match.start(), match.end())
    return text


def shorten(value: str, limit: int) -> str:
    if len(value) <= limit:
        return value
    half = (limit - 1) // 2
    return value[:half] + "…" + value[len(value) - (limit - 1 - half) :]


def token_label(token: int, vocab: Vocab) -> Text:
    """One token as people read it: specials bold, text quoted with escapes, bytes in hex."""
    if vocab.is_special(token):
        return Text(vocab.decode([token]), style=SPECIAL)
    raw = vocab.token_bytes(token)
    try:
        value = raw.decode("utf-8")
    except UnicodeDecodeError:
        return Text("".join(f"\\x{b:02x}" for b in raw), style=ESCAPED)
    label = Text('"')
    label.append_text(safe_text(value, keep_newlines=False))
    label.append('"')
    return label


def render_stream_text(tokens: Sequence[int], vocab: Vocab) -> Text:
    """The decoded stream with every special token marked; ordinary runs decoded together."""
    out = Text()
    run: list[int] = []
    for token in [*tokens, -1]:
        if token >= 0 and not vocab.is_special(token):
            run.append(token)
            continue
        if run:
            out.append_text(safe_text(vocab.decode(run)))
            run = []
        if token >= 0:
            out.append(vocab.decode([token]), style=SPECIAL)
    return out


def render_token_table(tokens: Sequence[int], vocab: Vocab) -> Table:
    table = Table(box=None, pad_edge=False, show_edge=False)
    table.add_column("index", justify="right", style=DIM)
    table.add_column("id", justify="right")
    table.add_column("token")
    table.add_column("special")
    for index, token in enumerate(tokens):
        table.add_row(
            str(index),
            str(token),
            token_label(token, vocab),
            "yes" if vocab.is_special(token) else "",
        )
    return table


# --- explain ---------------------------------------------------------------------------------


def render_explain(d: Diagnosis, source: str, vocab: Vocab, window: int = 6) -> RenderableType:
    parts: list[RenderableType] = [_input_line(d, source)]
    parts.extend(Text(f"note: {n}", style=WARNING) for n in d.input.notes)
    if d.verdict == "ok" and not d.findings:
        parts.append(Text.assemble(("OK", OK), "  openai-harmony parses the stream cleanly."))
    for finding in d.findings:
        parts.append(Rule(style=DIM))
        parts.append(_finding_view(finding, d.input.tokens, vocab, window))
    parts.extend(
        Text.assemble(("replay disagrees: ", ERROR), safe_text(note)) for note in d.disagreements
    )
    parts.append(Rule(style=DIM))
    parts.append(_messages_view(d.replay.messages, d.verdict, vocab, d.input.tokens))
    parts.append(_lenient_view(d))
    parts.append(_summary(d.findings))
    return Group(*parts)


def _input_line(d: Diagnosis, source: str) -> Text:
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


def _finding_view(f: Finding, tokens: Sequence[int], vocab: Vocab, window: int) -> RenderableType:
    head = Text.assemble(
        (
            "FAULT " if f.severity == "error" else "WARN  ",
            ERROR if f.severity == "error" else WARNING,
        ),
        (f" {f.code} ", "reverse"),
        "  ",
        (f.kind, LABEL),
        "  ",
        f.title,
    )
    facts = Table.grid(padding=(0, 2))
    facts.add_column(style=DIM, no_wrap=True)
    facts.add_column()
    if f.harmony_error is not None:
        facts.add_row(
            "openai-harmony", safe_text(shorten(f.harmony_error, 600), keep_newlines=False)
        )
    if f.raise_index is not None:
        facts.add_row("raised at", _token_ref(tokens, f.raise_index, vocab))
    if f.origin_index is not None:
        where = _token_ref(tokens, f.origin_index, vocab)
        if f.raise_index is not None and f.origin_index < f.raise_index:
            where.append(f"  ({f.raise_index - f.origin_index} tokens before the raise)", DIM)
        facts.add_row("went wrong at" if f.severity == "error" else "at", where)
    facts.add_row("expected", safe_text(f.expected, keep_newlines=False))
    facts.add_row("found", safe_text(shorten(f.found, 400), keep_newlines=False))
    if f.span is not None and f.kind != "markup_leak":
        header = vocab.decode(tokens[f.span[0] : f.span[1]])
        facts.add_row(
            f"header {f.span[0]}-{f.span[1]}",
            safe_text(repr(shorten(header, 300)), keep_newlines=False),
        )
    advice = Table.grid(padding=(0, 2))
    advice.add_column(style=LABEL, no_wrap=True)
    advice.add_column()
    advice.add_row("why", f.cause)
    advice.add_row("fix", f.fix)
    return Group(
        head,
        Padding(facts, (1, 0, 0, 2), expand=False),
        Padding(_token_window(f, tokens, vocab, window), (1, 0, 0, 2), expand=False),
        Padding(advice, (1, 0, 0, 2), expand=False),
    )


def _token_ref(tokens: Sequence[int], index: int, vocab: Vocab) -> Text:
    if index >= len(tokens):
        return Text(f"end of stream (after token {len(tokens) - 1})")
    ref = Text(f"token {index}  ")
    ref.append_text(token_label(tokens[index], vocab))
    ref.append(f"  (id {tokens[index]})", DIM)
    return ref


def _window_indexes(f: Finding, size: int, window: int) -> list[int | None]:
    """Indexes to show around the origin and the raise point; None marks a gap."""
    wanted: set[int] = set()
    for center in (f.origin_index, f.raise_index):
        if center is not None:
            wanted.update(range(max(0, center - window), min(size, center + window + 1)))
    out: list[int | None] = []
    previous = -1
    for index in sorted(wanted):
        if out and index != previous + 1:
            out.append(None)
        out.append(index)
        previous = index
    return out


def _token_window(f: Finding, tokens: Sequence[int], vocab: Vocab, window: int) -> Table:
    table = Table(box=None, pad_edge=False, show_edge=False, header_style=DIM)
    table.add_column("", no_wrap=True)
    table.add_column("idx", justify="right", style=DIM)
    table.add_column("id", justify="right", style=DIM)
    table.add_column("token", no_wrap=True, max_width=48, overflow="ellipsis")
    table.add_column("")
    indexes = _window_indexes(f, len(tokens), window)
    previous = -1
    for index in indexes:
        if index is None:
            continue
        if index != previous + 1 and previous >= 0:
            table.add_row("", "⋮", "", Text(f"{index - previous - 1} tokens", DIM), "")
        previous = index
        in_span = f.span is not None and f.span[0] <= index < f.span[1]
        marker, note = "┃" if in_span else " ", Text()
        if index == f.origin_index:
            marker, note = "▶", Text("went wrong here", ERROR if f.severity == "error" else WARNING)
        if index == f.raise_index:
            said = "went wrong here; " if index == f.origin_index else ""
            marker, note = "✖", Text(f"{said}openai-harmony raised here", ERROR)
        label = token_label(tokens[index], vocab)
        if in_span:
            label.stylize(HEADER_SPAN)
        table.add_row(marker, str(index), str(tokens[index]), label, note)
    if f.raise_index is not None and f.raise_index >= len(tokens):
        table.add_row(
            "✖",
            str(len(tokens)),
            "",
            Text("end of stream", DIM),
            Text("openai-harmony raised here", ERROR),
        )
    return table


def _messages_view(
    messages: Sequence[Message], verdict: str, vocab: Vocab, tokens: Sequence[int]
) -> RenderableType:
    title = "Messages before the fault" if verdict == "fault" else "Messages"
    if not messages:
        return Text.assemble((title, LABEL), ": none")
    return Group(
        Text(title, style=LABEL), Padding(_message_table(messages), (0, 0, 0, 2), expand=False)
    )


def header_summary(
    role: str | None, channel: str | None, recipient: str | None, content_type: str | None
) -> str:
    """`assistant · commentary · to=functions.x · <|constrain|>json`, empty parts left out."""
    bits = [role or "?", channel or "", f"to={recipient}" if recipient else "", content_type or ""]
    return " · ".join(b for b in bits if b)


def _message_table(messages: Iterable[Message]) -> Table:
    table = Table(box=None, pad_edge=False, show_edge=False, header_style=DIM)
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("tokens", no_wrap=True)
    table.add_column("header", overflow="fold", max_width=44)
    table.add_column("end", no_wrap=True)
    table.add_column("content", no_wrap=True, overflow="ellipsis", min_width=20)
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
            safe_text(shorten(m.text, 160), keep_newlines=False),
        )
    return table


def _lenient_view(d: Diagnosis) -> RenderableType:
    title = Text("Lenient parse (strict=False)", style=LABEL)
    if not d.replay.strict:
        return Text.assemble(title, ": this run is lenient; see above")
    verdict = (
        Text.assemble(
            ("raises ", ERROR), safe_text(shorten(d.lenient_error, 200), keep_newlines=False)
        )
        if d.lenient_error
        else Text("parses", style=OK)
    )
    line = Text.assemble(title, ": ", verdict, f", {len(d.lenient_messages)} message(s) recovered")
    rows: list[RenderableType] = [line]
    table = Table(box=None, pad_edge=False, show_edge=False, header_style=DIM)
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("header", overflow="fold", max_width=44)
    table.add_column("content", no_wrap=True, overflow="ellipsis", min_width=20)
    for index, message in enumerate(d.lenient_messages):
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
            safe_text(shorten(text, 160), keep_newlines=False),
        )
    if d.lenient_messages:
        rows.append(Padding(table, (0, 0, 0, 2), expand=False))
    return Group(*rows)


def _summary(findings: Sequence[Finding]) -> Text:
    errors = sum(1 for f in findings if f.severity == "error")
    warnings = len(findings) - errors
    style = ERROR if errors else WARNING if warnings else OK
    return Text(f"{errors} error(s), {warnings} warning(s)", style=style)
