"""Tokens as people read them: labels, the token table, the window around a fault, stream text."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table
from rich.text import Text

from harmony_doctor.harmony.vocab import Vocab
from harmony_doctor.models import Finding
from harmony_doctor.output.escape import safe_text
from harmony_doctor.output.styles import DIM, ERROR, ESCAPED, HEADER_SPAN, SPECIAL, WARNING


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


def stream_text_view(tokens: Sequence[int], vocab: Vocab) -> Text:
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


def token_table_view(tokens: Sequence[int], vocab: Vocab) -> Table:
    """Every token a row: index, id, label, and whether it is special."""
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


def token_ref(tokens: Sequence[int], index: int, vocab: Vocab) -> Text:
    """`token 12  "foo"  (id 4321)`, or the end of the stream when `index` is past it."""
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


def token_window(f: Finding, tokens: Sequence[int], vocab: Vocab, window: int) -> Table:
    """The tokens around a finding, with where it went wrong and where the parser raised."""
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
