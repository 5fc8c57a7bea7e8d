"""`recover`, `repro` and explain's next steps for people: what can be salvaged, and how."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from harmony_doctor.harmony.vocab import Vocab, special_token_name
from harmony_doctor.output.escape import safe_text, shorten
from harmony_doctor.output.layout import Fitted, capped, facts_grid, header_summary, separator
from harmony_doctor.output.styles import DIM, ERROR, LABEL, OK, WARNING
from harmony_doctor.output.tokens import stream_text_view

if TYPE_CHECKING:  # explain's next steps show no salvage record
    from harmony_doctor.models import ParserResult, Received, Recovery, Shrink

# --- recover ---------------------------------------------------------------------------------


def recover_view(
    rec: Recovery, strict: Received, lenient: Received, source: str, vocab: Vocab
) -> RenderableType:
    """Strict, lenient and salvage side by side, then every salvaged piece with its provenance.

    `strict` and `lenient` are what a client would have received from each parse
    (`recover.received` of their messages); the caller computes them, this only shows them.
    """
    inp = rec.input
    bits = [source, inp.format, f"{len(inp.tokens)} tokens", f"role {rec.role}"]
    head = Text("harmony-doctor recover  ", style=LABEL)
    head.append_text(safe_text(" · ".join(bits), DIM, keep_newlines=False))
    certain = sum(1 for p in rec.pieces if p.confidence == "certain")
    rows: list[tuple[str, RenderableType, RenderableType, RenderableType]] = []
    rows.append(
        (
            "error",
            _error_cell(rec.strict),
            _error_cell(rec.lenient),
            Text(f"{len(rec.skipped)} span(s) skipped" if rec.skipped else "—", DIM),
        )
    )
    rows.append(
        (
            "messages",
            str(len(rec.strict.messages)),
            str(len(rec.lenient.messages)) if rec.lenient.available else "—",
            f"{len(rec.pieces)} ({certain} certain, {len(rec.pieces) - certain} guessed)",
        )
    )
    salvage_analysis = _pieces_cell(rec, rec.analysis)
    salvage_final = _pieces_cell(rec, (rec.final,) if rec.final is not None else ())
    rows.append(("analysis", _cell(strict.analysis), _cell(lenient.analysis), salvage_analysis))
    rows.append(("final", _cell(strict.final), _cell(lenient.final), salvage_final))
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
    rows.append(
        (
            "tool call",
            _call_cell(strict.tool_recipient, strict.tool_arguments),
            _call_cell(lenient.tool_recipient, lenient.tool_arguments),
            salvage_call,
        )
    )
    table = Fitted(lambda width: _side_by_side(rows, width))
    parts: list[RenderableType] = [head, Text(""), table, separator()]
    parts.append(Text("Salvaged pieces (token spans end-exclusive)", style=LABEL))
    pieces = Fitted(lambda width: _pieces_table(rec, width))
    parts.append(Padding(pieces, (0, 0, 0, 2), expand=False))
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


_SIDES = ("openai-harmony strict", "lenient (strict=False)", "salvage (harmony-doctor)")


def _side_by_side(
    rows: list[tuple[str, RenderableType, RenderableType, RenderableType]], width: int | None
) -> RenderableType:
    """Strict, lenient and salvage in three columns; below 100 cells, one block each."""
    if width is not None and width < 100:
        blocks: list[RenderableType] = []
        for side, title in enumerate(_SIDES, start=1):
            grid = Table(box=None, pad_edge=False, show_edge=False, show_header=False)
            grid.add_column(style=DIM, no_wrap=True)
            grid.add_column(overflow="fold")
            for row in rows:
                grid.add_row(row[0], row[side])
            blocks.extend([Text(title, style=LABEL), Padding(grid, (0, 0, 0, 2), expand=False)])
        return Group(*blocks)
    table = Table(box=None, pad_edge=False, show_edge=False, header_style=LABEL)
    table.add_column("", style=DIM, no_wrap=True)
    for title in _SIDES:
        if width is None:
            table.add_column(title, no_wrap=True)
        else:
            table.add_column(title, overflow="fold", ratio=1)
    for row in rows:
        table.add_row(*row)
    return table


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


def _pieces_table(rec: Recovery, width: int | None) -> RenderableType:
    if not rec.pieces:
        return Text("none", DIM)
    if width is not None and width < 100:
        return _pieces_stacked(rec)
    table = Table(box=None, pad_edge=False, show_edge=False, header_style=DIM)
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("tokens", no_wrap=True)
    table.add_column("", no_wrap=True)
    if width is None:
        table.add_column("header", no_wrap=True)
        table.add_column("end", no_wrap=True)
        table.add_column("content / how", no_wrap=True)
    else:
        table.add_column("header", overflow="fold", max_width=capped(width, 0.3, 14, 40))
        table.add_column("end", no_wrap=True)
        table.add_column("content / how", overflow="fold", min_width=20)
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


def _pieces_stacked(rec: Recovery) -> RenderableType:
    """Narrow terminals: each piece's facts on one line, its content and provenance below."""
    blocks: list[RenderableType] = []
    for index, p in enumerate(rec.pieces):
        end = special_token_name(p.terminator) if p.terminator is not None else "—"
        line = Text(f"{index}  {p.span[0]}-{p.span[1]}  ")
        line.append(p.confidence, OK if p.confidence == "certain" else WARNING)
        line.append("  ")
        header = header_summary(p.name or p.role, p.channel, p.recipient, p.content_type)
        line.append_text(safe_text(header, keep_newlines=False))
        line.append(f"  {end}")
        body = safe_text(repr(shorten(p.text, 160)), keep_newlines=False)
        body.append("\n")
        body.append_text(safe_text(p.how, DIM, keep_newlines=False))
        blocks.extend([line, Padding(body, (0, 0, 0, 3), expand=False)])
    return Group(*blocks)


# --- repro -----------------------------------------------------------------------------------


def repro_view(
    result: Shrink, out_dir: str, written: Sequence[str], vocab: Vocab
) -> RenderableType:
    """The shrunk failure: the original error, the minimal stream, and the files written."""
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
    facts.add_row("minimal", stream_text_view(result.minimal, vocab))
    facts.add_row("fails with", safe_text(shorten(result.minimal_error, 300), keep_newlines=False))
    for name in written:
        facts.add_row("wrote", safe_text(name, keep_newlines=False))
    return Group(head, Padding(facts, (1, 0, 0, 2), expand=False))


# --- next steps ------------------------------------------------------------------------------


def next_steps_view(commands: Sequence[str]) -> RenderableType:
    """The closing lines of `explain`: what to run next on the same input."""
    lines = [safe_text(command, keep_newlines=False) for command in commands]
    return Group(
        Text("Next: salvage what can be saved, or shrink it for an upstream issue", DIM), *lines
    )
