"""Tokens as people read them: labels, the token table, the window around a fault, stream text."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from rich.cells import cell_len
from rich.table import Table
from rich.text import Text

from harmony_doctor.harmony.vocab import Vocab
from harmony_doctor.output.escape import safe_text
from harmony_doctor.output.styles import DIM, ERROR, ESCAPED, HEADER_SPAN, SPECIAL, WARNING

if TYPE_CHECKING:
    from harmony_doctor.models import Finding


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


def token_table_view(tokens: Sequence[int], vocab: Vocab) -> Text:
    """Every token a row: index, id, label, and whether it is special (the whole table)."""
    return Text("\n").join(token_table_blocks(tokens, vocab))


def token_table_blocks(
    tokens: Sequence[int], vocab: Vocab, width: int | None = None, rows: int = 2048
) -> Iterator[Text]:
    """The token table (index, id, token, special) in blocks of `rows` lines (without the last
    newline, which printing adds), to be printed as they come: two passes over the tokens (the
    widths, then the rows), so time and memory grow with the tokens, never faster. A label
    wider than `width` leaves room for is folded over several lines, as a table cell would."""
    labels = _Labels(vocab)
    index_width = max(len("index"), len(str(max(len(tokens) - 1, 0))))
    id_width = max([len("id"), *(len(str(t)) for t in set(tokens))])
    token_width = max([len("token"), *(labels.width(t) for t in set(tokens))])
    if width is not None:
        room = width - index_width - id_width - len("special") - 3 * len(_GAP)
        token_width = max(len("token"), min(token_width, room))
    block = Text()
    _row(block, ("index", "id", "token", "special"), (index_width, id_width, token_width), "bold")
    for index, token in enumerate(tokens):
        pieces = _fold(labels.text(token), token_width)
        special = "yes" if vocab.is_special(token) else ""
        cells: tuple[str | Text, ...] = (str(index), str(token), pieces[0], special)
        _row(block, cells, (index_width, id_width, token_width), "")
        for more in pieces[1:]:
            _row(block, ("", "", more, ""), (index_width, id_width, token_width), "")
        if (index + 1) % rows == 0:
            block.right_crop(1)  # the newline printing adds
            yield block
            block = Text()
    if block:
        block.right_crop(1)
        yield block


_GAP = "  "


def _row(out: Text, cells: tuple[str | Text, ...], widths: tuple[int, ...], style: str) -> None:
    """One table line: index and id right-aligned and dim, the label padded, no trailing
    spaces."""
    index, ident, label, special = cells
    out.append(str(index).rjust(widths[0]), style or DIM)
    out.append(_GAP + str(ident).rjust(widths[1]), style)
    out.append(_GAP)
    out.append_text(label if isinstance(label, Text) else Text(label, style))
    if special:
        out.append(" " * (widths[2] - cell_len(str(label))) + _GAP + str(special), style)
    out.append("\n")


def _fold(label: Text, width: int) -> list[Text]:
    """A label as lines of at most `width` cells (one line when it fits)."""
    if cell_len(label.plain) <= width:
        return [label]
    cuts: list[int] = []
    used = 0
    for offset, char in enumerate(label.plain):
        size = cell_len(char)
        if used + size > width:
            cuts.append(offset)
            used = 0
        used += size
    return list(label.divide(cuts))


class _Labels:
    """token_label per distinct token, remembered: a stream repeats its tokens."""

    def __init__(self, vocab: Vocab) -> None:
        self.vocab = vocab
        self._texts: dict[int, Text] = {}

    def text(self, token: int) -> Text:
        found = self._texts.get(token)
        if found is None:
            found = self._texts[token] = token_label(token, self.vocab)
        return found

    def width(self, token: int) -> int:
        return cell_len(self.text(token).plain)


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
