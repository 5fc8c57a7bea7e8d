"""Layout pieces several views share: the two-column fact grid and the one-line message header."""

from __future__ import annotations

from rich.table import Table

from harmony_doctor.output.styles import DIM


def facts_grid() -> Table:
    """Two columns: a dim label and its value."""
    facts = Table.grid(padding=(0, 2))
    facts.add_column(style=DIM, no_wrap=True)
    facts.add_column()
    return facts


def header_summary(
    role: str | None, channel: str | None, recipient: str | None, content_type: str | None
) -> str:
    """`assistant · commentary · to=functions.x · <|constrain|>json`, empty parts left out."""
    bits = [role or "?", channel or "", f"to={recipient}" if recipient else "", content_type or ""]
    return " · ".join(b for b in bits if b)
