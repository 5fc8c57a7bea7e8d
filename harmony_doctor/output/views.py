"""Rich renderables for people, and the one escaping helper every untrusted string goes through."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from harmony_doctor.harmony.vocab import FIRST_SPECIAL, Vocab, special_token_name
from harmony_doctor.models import (
    Diagnosis,
    Finding,
    LogError,
    Message,
    ParserResult,
    Recovery,
    RenderedPrompt,
    Shrink,
)
from harmony_doctor.rules import RULES
from harmony_doctor.rules import Rule as RuleEntry

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


def finding_head(severity: str, code: str, kind: str, title: str) -> Text:
    """`FAULT  HD101  header_leftover  Prose where a message header belongs`."""
    is_error = severity == "error"
    return Text.assemble(
        ("FAULT " if is_error else "WARN  ", ERROR if is_error else WARNING),
        (f" {code} ", "reverse"),
        "  ",
        (kind, LABEL),
        "  ",
        title,
    )


def facts_grid() -> Table:
    """Two columns: a dim label and its value."""
    facts = Table.grid(padding=(0, 2))
    facts.add_column(style=DIM, no_wrap=True)
    facts.add_column()
    return facts


def _finding_view(f: Finding, tokens: Sequence[int], vocab: Vocab, window: int) -> RenderableType:
    head = finding_head(f.severity, f.code, f.kind, f.title)
    facts = facts_grid()
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


# --- recover ---------------------------------------------------------------------------------


def render_recover(rec: Recovery, source: str, vocab: Vocab) -> RenderableType:
    """Strict, lenient and salvage side by side, then every salvaged piece with its provenance."""
    from harmony_doctor.recover import received

    inp = rec.input
    bits = [source, inp.format, f"{len(inp.tokens)} tokens", f"role {rec.role}"]
    head = Text("harmony-doctor recover  ", style=LABEL)
    head.append_text(safe_text(" · ".join(bits), DIM, keep_newlines=False))
    strict, lenient = received(rec.strict.messages), received(rec.lenient.messages)
    table = Table(box=None, pad_edge=False, show_edge=False, header_style=LABEL)
    table.add_column("", style=DIM, no_wrap=True)
    for title in ("openai-harmony strict", "lenient (strict=False)", "salvage (harmony-doctor)"):
        table.add_column(title, overflow="fold", ratio=1)
    certain = sum(1 for p in rec.pieces if p.confidence == "certain")
    table.add_row(
        "error",
        _error_cell(rec.strict),
        _error_cell(rec.lenient),
        Text(f"{len(rec.skipped)} span(s) skipped" if rec.skipped else "—", DIM),
    )
    table.add_row(
        "messages",
        str(len(rec.strict.messages)),
        str(len(rec.lenient.messages)) if rec.lenient.available else "—",
        f"{len(rec.pieces)} ({certain} certain, {len(rec.pieces) - certain} guessed)",
    )
    salvage_analysis = _pieces_cell(rec, rec.analysis)
    salvage_final = _pieces_cell(rec, (rec.final,) if rec.final is not None else ())
    table.add_row("analysis", _cell(strict.analysis), _cell(lenient.analysis), salvage_analysis)
    table.add_row("final", _cell(strict.final), _cell(lenient.final), salvage_final)
    call = rec.tool_call
    salvage_call: RenderableType = Text("—", DIM)
    if call is not None:
        piece = rec.pieces[call.piece]
        salvage_call = _provenance(piece.confidence, piece.span)
        salvage_call.append_text(safe_text(f"{call.recipient} {shorten(call.arguments, 120)}"))
        salvage_call.append(
            ("  args are JSON" if call.arguments_json else "  args are not JSON")
            + ("" if call.complete else ", no <|call|>"),
            DIM,
        )
    table.add_row(
        "tool call",
        _call_cell(strict.tool_recipient, strict.tool_arguments),
        _call_cell(lenient.tool_recipient, lenient.tool_arguments),
        salvage_call,
    )
    parts: list[RenderableType] = [head, Text(""), table, Rule(style=DIM)]
    parts.append(Text("Salvaged pieces (token spans end-exclusive)", style=LABEL))
    parts.append(Padding(_pieces_table(rec), (0, 0, 0, 2), expand=False))
    for skip in rec.skipped:
        line = Text(f"  skipped {skip.span[0]}-{skip.span[1]}  ", style=WARNING)
        line.append_text(safe_text(skip.reason, keep_newlines=False))
        line.append("  ")
        line.append_text(
            safe_text(
                repr(shorten(vocab.decode(rec.input.tokens[skip.span[0] : skip.span[1]]), 80)),
                DIM,
                keep_newlines=False,
            )
        )
        parts.append(line)
    verdict = (
        Text("openai-harmony parses the stream; nothing needed salvaging.", style=OK)
        if rec.strict.error is None
        else Text(
            "guessed pieces are inferences from the tokens, not parser output; check them "
            "before use.",
            style=WARNING,
        )
        if certain < len(rec.pieces)
        else Text("every salvaged piece was parsed by openai-harmony.", style=OK)
    )
    parts.append(verdict)
    return Group(*parts)


def _error_cell(result: ParserResult) -> Text:
    if not result.available:
        return Text("not available in this openai-harmony", DIM)
    if result.error is None:
        return Text("none", OK)
    text = safe_text(shorten(result.error, 90), ERROR, keep_newlines=False)
    if result.raise_index is not None:
        text.append(f" (token {result.raise_index})", DIM)
    return text


def _cell(value: str | None) -> Text:
    if value is None:
        return Text("—", DIM)
    return safe_text(repr(shorten(value, 160)), keep_newlines=False)


def _call_cell(recipient: str | None, arguments: str | None) -> Text:
    if recipient is None:
        return Text("—", DIM)
    return safe_text(f"{recipient} {shorten(arguments or '', 120)}", keep_newlines=False)


def _provenance(confidence: str, span: tuple[int, int]) -> Text:
    style = OK if confidence == "certain" else WARNING
    return Text.assemble((f"[{confidence} {span[0]}-{span[1]}] ", style))


def _pieces_cell(rec: Recovery, indexes: Sequence[int]) -> RenderableType:
    if not indexes:
        return Text("—", DIM)
    out = Text()
    for n, index in enumerate(indexes):
        piece = rec.pieces[index]
        if n:
            out.append("\n")
        out.append_text(_provenance(piece.confidence, piece.span))
        out.append_text(safe_text(repr(shorten(piece.text, 160)), keep_newlines=False))
    return out


def _pieces_table(rec: Recovery) -> RenderableType:
    if not rec.pieces:
        return Text("none", DIM)
    table = Table(box=None, pad_edge=False, show_edge=False, header_style=DIM)
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("tokens", no_wrap=True)
    table.add_column("", no_wrap=True)
    table.add_column("header", overflow="fold", max_width=40)
    table.add_column("end", no_wrap=True)
    table.add_column("content / how", overflow="fold", min_width=30)
    for index, p in enumerate(rec.pieces):
        end = special_token_name(p.terminator) if p.terminator is not None else "—"
        cell = safe_text(repr(shorten(p.text, 160)), keep_newlines=False)
        cell.append("\n")
        cell.append_text(safe_text(p.how, DIM, keep_newlines=False))
        table.add_row(
            str(index),
            f"{p.span[0]}-{p.span[1]}",
            Text(p.confidence, OK if p.confidence == "certain" else WARNING),
            safe_text(
                header_summary(p.name or p.role, p.channel, p.recipient, p.content_type),
                keep_newlines=False,
            ),
            end,
            cell,
        )
    return table


# --- repro -----------------------------------------------------------------------------------


def render_repro(
    result: Shrink, out_dir: str, written: Sequence[str], vocab: Vocab
) -> RenderableType:
    head = Text("harmony-doctor repro  ", style=LABEL)
    head.append_text(safe_text(out_dir, DIM, keep_newlines=False))
    facts = facts_grid()
    facts.add_row(
        "error", safe_text(shorten(result.original_error, 300), ERROR, keep_newlines=False)
    )
    facts.add_row("kind / shape", safe_text(f"{result.kind} · {result.shape}", keep_newlines=False))
    size = f"{len(result.original)} -> {len(result.minimal)} tokens ({result.tests} parser runs)"
    if result.exhausted:
        size += "; run budget spent, may not be 1-minimal"
    facts.add_row("shrunk", size)
    facts.add_row("minimal", render_stream_text(result.minimal, vocab))
    facts.add_row("fails with", safe_text(shorten(result.minimal_error, 300), keep_newlines=False))
    for name in written:
        facts.add_row("wrote", safe_text(name, keep_newlines=False))
    return Group(head, Padding(facts, (1, 0, 0, 2), expand=False))


# --- render ----------------------------------------------------------------------------------


def render_prompt(prompt: RenderedPrompt, source: str, vocab: Vocab) -> RenderableType:
    """The prompt with special tokens marked, then the multi-turn warnings."""
    head = Text("harmony-doctor render  ", style=LABEL)
    bits = [source, f"style {prompt.style}", f"{len(prompt.tokens)} tokens"]
    head.append_text(safe_text(" · ".join(bits), DIM, keep_newlines=False))
    parts: list[RenderableType] = [head, Rule(style=DIM), render_stream_text(prompt.tokens, vocab)]
    parts.append(Rule(style=DIM))
    for w in prompt.warnings:
        where = f"message {w.message}" if w.message is not None else "request"
        line = Text.assemble(("WARN  ", WARNING), (w.code, LABEL), f"  {where}: ")
        line.append_text(safe_text(w.text, keep_newlines=False))
        parts.append(line)
    count = len(prompt.warnings)
    parts.append(Text(f"{count} warning(s)", style=WARNING if count else OK))
    return Group(*parts)


def render_next_steps(commands: Sequence[str]) -> RenderableType:
    """The closing lines of `explain`: what to run next on the same input."""
    lines = [safe_text(command, keep_newlines=False) for command in commands]
    return Group(
        Text("Next: salvage what can be saved, or shrink it for an upstream issue", DIM), *lines
    )


# --- scan ------------------------------------------------------------------------------------

_BLOCKS = " ▏▎▍▌▋▊▉█"


def bar(value: float, width: int) -> str:
    """A horizontal bar of `value` (0..1) in `width` cells, with eighth-cell precision."""
    cells = max(0.0, min(1.0, value)) * width
    full = int(cells)
    rest = int((cells - full) * 8)
    return "█" * full + (_BLOCKS[rest] if rest and full < width else "")


def render_scan(
    groups: list[dict[str, Any]],
    by: tuple[str, ...],
    totals: dict[str, Any],
    days: list[tuple[str, int]],
    files: list[dict[str, Any]],
    top: int,
    width: int = 100,
    title: str = "scan",
) -> RenderableType:
    parts: list[RenderableType] = [_scan_headline(totals, title)]
    if not groups:
        parts.append(Text("No Harmony failures found.", style=OK))
    else:
        parts.append(_groups_table(groups, by, top, width))
        if len(groups) > top:
            parts.append(Text(f"… {len(groups) - top} more groups (--top, --format csv)", DIM))
        if len(days) > 1:
            parts.append(_days_chart(days))
    if len(files) > 1 or any(f["status"] != "ok" for f in files):
        parts.append(_files_table(files, top))
    return Group(*parts)


def _scan_headline(totals: dict[str, Any], title: str) -> Text:
    line = Text(f"harmony-doctor {title}  ", style=LABEL)
    bits = [
        f"{totals['files']} file(s)",
        _size(totals["bytes"]),
        f"{totals['lines']:,} lines",
        f"{totals['failures']:,} failure(s)",
    ]
    if totals.get("requests"):
        bits.append(f"{totals['requests']:,} requests")
        bits.append(f"rate {totals['rate']:.2%}")
    if totals.get("skipped") or totals.get("partial"):
        bits.append(f"{totals['skipped']} skipped, {totals['partial']} partial")
    line.append(" · ".join(bits), DIM)
    return line


def _size(count: int) -> str:
    """1,234 B, 12.3 MB, 1.2 GB."""
    value = float(count)
    for unit in ("B", "KB", "MB"):
        if value < 1000:
            return f"{count:,} B" if unit == "B" else f"{value:,.1f} {unit}"
        value /= 1000
    return f"{value:,.1f} GB"


def _files_table(files: list[dict[str, Any]], top: int) -> RenderableType:
    table = Table(box=None, pad_edge=False, show_edge=False, header_style=DIM)
    table.add_column("file", overflow="fold", max_width=60)
    table.add_column("status", no_wrap=True)
    table.add_column("lines", justify="right", no_wrap=True)
    table.add_column("failures", justify="right", no_wrap=True)
    table.add_column("reason", overflow="fold")
    ordered = sorted(files, key=lambda f: (f["status"] == "ok", -f["failures"], f["path"]))
    for f in ordered[:top]:
        style = OK if f["status"] == "ok" else WARNING
        table.add_row(
            safe_text(f["path"], keep_newlines=False),
            Text(f["status"], style=style),
            f"{f['lines']:,}",
            f"{f['failures']:,}",
            safe_text(f["reason"] or "", keep_newlines=False),
        )
    rows: list[RenderableType] = [Text("files", style=LABEL), table]
    if len(files) > top:
        rows.append(Text(f"… {len(files) - top} more files (--format json)", DIM))
    return Group(*rows)


def _groups_table(groups: list[dict[str, Any]], by: tuple[str, ...], top: int, width: int) -> Table:
    """The summary table; on narrow terminals the time columns go first, then the example."""
    shown = groups[:top]
    widths = {k: min(40, max(len(k), *(len(str(g[k])) for g in shown))) for k in by}
    spare = width - sum(w + 2 for w in widths.values()) - 40  # count, share, bar, rate
    columns = {"example": spare >= 14, "first seen": spare >= 48, "last seen": spare >= 66}
    table = Table(box=None, pad_edge=False, show_edge=False, header_style=DIM)
    for key in by:
        table.add_column(key, overflow="fold", min_width=widths[key], max_width=40)
    table.add_column("count", justify="right", no_wrap=True)
    table.add_column("share", justify="right", no_wrap=True)
    table.add_column("", no_wrap=True, width=10)
    table.add_column("rate", justify="right", no_wrap=True)
    for name in ("first seen", "last seen"):
        if columns[name]:
            table.add_column(name, no_wrap=True)
    if columns["example"]:
        room = spare - 18 * (columns["first seen"] + columns["last seen"])
        table.add_column("example", no_wrap=True, overflow="ellipsis", max_width=max(12, room))
    biggest = max(g["count"] for g in shown)
    for g in shown:
        cells: list[Any] = [
            *(safe_text(str(g[k]) if g[k] is not None else "-", keep_newlines=False) for k in by),
            f"{g['count']:,}",
            f"{g['share']:.1%}",
            Text(bar(g["count"] / biggest, 10), style="cyan"),
            "" if g.get("rate") is None else f"{g['rate']:.2%}",
        ]
        if columns["first seen"]:
            cells.append(_short_time(g.get("first_seen")))
        if columns["last seen"]:
            cells.append(_short_time(g.get("last_seen")))
        if columns["example"]:
            cells.append(safe_text(g.get("example") or "", keep_newlines=False))
        table.add_row(*cells)
    return table


def _short_time(stamp: str | None) -> str:
    return (stamp or "")[:16].replace("T", " ")


def _days_chart(days: list[tuple[str, int]]) -> RenderableType:
    table = Table(box=None, pad_edge=False, show_edge=False, show_header=False)
    table.add_column(style=DIM, no_wrap=True)
    table.add_column(justify="right")
    table.add_column(no_wrap=True)
    biggest = max(n for _, n in days)
    for day, n in days[-31:]:
        table.add_row(day, f"{n:,}", Text(bar(n / biggest, 30), style="cyan"))
    return Group(Text("failures per day", style=LABEL), table)


# --- explain on logs -------------------------------------------------------------------------


def render_log_explain(
    errors: Sequence[LogError], source: str, lines: int, vocab: Vocab | None
) -> RenderableType:
    """One block per failure found in log text: what, where, the header words, why, the fix."""
    head = Text("harmony-doctor explain  ", style=LABEL)
    bits = f"{source} · log · {lines} line(s) · {len(errors)} failure(s)"
    head.append_text(safe_text(bits, DIM, keep_newlines=False))
    parts: list[RenderableType] = [head]
    if not errors:
        parts.append(Text.assemble(("OK", OK), "  no Harmony failure found in this text."))
    for error in errors:
        parts.append(Rule(style=DIM))
        parts.append(_log_error_view(error, vocab))
    parts.append(Rule(style=DIM))
    parts.append(_summary_counts(errors))
    return Group(*parts)


def _summary_counts(errors: Sequence[LogError]) -> Text:
    failures = sum(1 for e in errors if e.severity == "error")
    warnings = len(errors) - failures
    style = ERROR if failures else WARNING if warnings else OK
    return Text(f"{failures} error(s), {warnings} warning(s)", style=style)


def _log_error_view(e: LogError, vocab: Vocab | None) -> RenderableType:
    head = finding_head(e.severity, e.code, e.kind, e.title)
    facts = facts_grid()
    where = f"{e.line}" if e.span[0] == e.span[1] else f"{e.line} (lines {e.span[0]}-{e.span[1]})"
    facts.add_row("line", where)
    origin = [
        e.server or "server unknown",
        f"openai-harmony {e.harmony_version}" if e.harmony_version else "",
        f"pid {e.pid}" if e.pid is not None else "",
        e.timestamp or "",
    ]
    facts.add_row("seen in", safe_text(" · ".join(b for b in origin if b), keep_newlines=False))
    facts.add_row("message", safe_text(shorten(e.message, 300), keep_newlines=False))
    if e.token is not None:
        facts.add_row("token", _log_token(e.token, vocab))
    if e.header_words:
        facts.add_row("header words", _header_words(e))
        if e.reconstructed:
            reconstructed = shorten(e.reconstructed, 300)
            facts.add_row("reconstructed", safe_text(reconstructed, keep_newlines=False))
    if e.context:
        facts.add_row("context", safe_text(shorten(e.context, 300), keep_newlines=False))
    facts.add_row("expected", safe_text(e.expected, keep_newlines=False))
    facts.add_row("found", safe_text(shorten(e.found, 400), keep_newlines=False))
    advice = Table.grid(padding=(0, 2))
    advice.add_column(style=LABEL, no_wrap=True)
    advice.add_column()
    advice.add_row("why", e.cause)
    advice.add_row("fix", e.fix)
    rule = RULES.get(e.code)
    if rule is not None and rule.refs:
        advice.add_row("refs", ", ".join(rule.refs))
    return Group(
        head,
        Padding(facts, (1, 0, 0, 2), expand=False),
        Padding(advice, (1, 0, 0, 2), expand=False),
    )


def _log_token(token: int, vocab: Vocab | None) -> Text:
    if vocab is not None:
        label = token_label(token, vocab)
    elif token >= FIRST_SPECIAL:
        label = Text(special_token_name(token), style=SPECIAL)
    else:
        label = Text("?")
    label.append(f"  (id {token})", DIM)
    return label


def _header_words(e: LogError, head: int = 24, tail: int = 8) -> Text:
    """The leftover words, long lists elided in the middle, the last word marked."""
    words = list(e.header_words)
    shown: list[str | None] = list(words)
    if len(words) > head + tail:
        shown = [*words[:head], None, *words[-tail:]]
    out = Text()
    for index, word in enumerate(shown):
        if index:
            out.append(" ")
        if word is None:
            out.append(f"… {len(words) - head - tail} more …", DIM)
        elif index == len(shown) - 1:
            out.append_text(safe_text(word, "underline", keep_newlines=False))
        else:
            out.append_text(safe_text(word, keep_newlines=False))
    if e.remainder_truncated:
        out.append("  ✂ the log cut the rest", WARNING)
    else:
        out.append(
            "  ◀ harmony took the 1-2 words after this as recipient and content type; "
            "the fault may sit there",
            WARNING,
        )
    return out


# --- rules -----------------------------------------------------------------------------------


def render_rules_table(catalogue: Iterable[RuleEntry]) -> Table:
    """The diagnosis catalogue, one code a row."""
    table = Table(box=None, pad_edge=False, show_edge=False, header_style=DIM)
    table.add_column("code", no_wrap=True)
    table.add_column("kind", no_wrap=True)
    table.add_column("severity", no_wrap=True)
    table.add_column("title")
    for rule in catalogue:
        table.add_row(
            Text(rule.code, style=LABEL),
            rule.kind,
            Text(rule.severity, style=ERROR if rule.severity == "error" else WARNING),
            rule.title,
        )
    return table


def render_rule(rule: RuleEntry) -> RenderableType:
    """One rule in full, as `harmony-doctor rules CODE` shows it."""
    head = Text.assemble((f" {rule.code} ", "reverse"), "  ", (rule.title, LABEL))
    facts = Table.grid(padding=(0, 2))
    facts.add_column(style=LABEL, no_wrap=True)
    facts.add_column()
    facts.add_row("kind", rule.kind)
    facts.add_row(
        "severity", Text(rule.severity, style=ERROR if rule.severity == "error" else WARNING)
    )
    facts.add_row("why", rule.cause)
    facts.add_row("fix", rule.fix)
    if rule.refs:
        facts.add_row("refs", "\n".join(rule.refs))
    return Group(head, Padding(facts, (1, 0, 0, 2), expand=False))
