"""`render` for people: the rendered prompt with its special tokens marked, then its warnings."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from harmony_doctor.harmony.vocab import Vocab
from harmony_doctor.models import RenderedPrompt
from harmony_doctor.output.escape import safe_text
from harmony_doctor.output.layout import separator
from harmony_doctor.output.styles import DIM, LABEL, OK, WARNING
from harmony_doctor.output.tokens import stream_text_view


def prompt_view(prompt: RenderedPrompt, source: str, vocab: Vocab) -> RenderableType:
    """The prompt with special tokens marked, then the multi-turn warnings."""
    head = Text("harmony-doctor render  ", style=LABEL)
    bits = [source, f"style {prompt.style}", f"{len(prompt.tokens)} tokens"]
    head.append_text(safe_text(" · ".join(bits), DIM, keep_newlines=False))
    parts: list[RenderableType] = [head, separator(), stream_text_view(prompt.tokens, vocab)]
    parts.append(separator())
    for w in prompt.warnings:
        where = f"message {w.message}" if w.message is not None else "request"
        line = Text.assemble(("WARN  ", WARNING), (w.code, LABEL), f"  {where}: ")
        line.append_text(safe_text(w.text, keep_newlines=False))
        parts.append(line)
    count = len(prompt.warnings)
    parts.append(Text(f"{count} warning(s)", style=WARNING if count else OK))
    return Group(*parts)
