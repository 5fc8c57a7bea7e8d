"""Layout pieces views share: fact grids, message headers, separators, width-aware tables."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from harmony_doctor.output.styles import DIM

if TYPE_CHECKING:  # tables and rules load where a view draws one (a clean scan's does not)
    from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
    from rich.table import Table


def facts_grid() -> Table:
    """Two columns: a dim label and its value."""
    from rich.table import Table

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


# Off a terminal the console is this wide, so nothing wraps and nothing is cut: a pipe to grep,
# jq or a file gets whole lines (`--width N` chooses a width instead).
UNLIMITED = 100_000
SEPARATOR_WIDTH = 100


class Fitted:
    """A renderable built when rich knows the width it has; None means unlimited (a pipe)."""

    def __init__(self, build: Callable[[int | None], RenderableType]) -> None:
        self.build = build

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = None if options.max_width >= UNLIMITED else options.max_width
        yield self.build(width)


def separator() -> RenderableType:
    """A dim rule across the view, never wider than SEPARATOR_WIDTH cells."""
    from rich.constrain import Constrain
    from rich.rule import Rule

    return Constrain(Rule(style=DIM), SEPARATOR_WIDTH)


def capped(width: int | None, share: float, floor: int, ceiling: int) -> int | None:
    """A column's most cells: a share of the width between floor and ceiling; None (no cap)
    when the width is unlimited."""
    if width is None:
        return None
    return max(floor, min(ceiling, int(width * share)))
