"""Where commands print: a rich console made per command, renderables and JSON on stdout."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from harmony_doctor.cli.options import Color, Format

if TYPE_CHECKING:  # rich loads when something is shown, not for --help
    from rich.console import Console, RenderableType


class Presentation(Protocol):
    """How a command was asked to show its result."""

    @property
    def output(self) -> Format: ...
    @property
    def color(self) -> Color: ...
    @property
    def width(self) -> int | None: ...


def make_console(color: Color, width: int | None = None) -> Console:
    """A console for stdout; an explicit --color wins over NO_COLOR and TERM.

    Without --width, a terminal's own width is used; off a terminal (a pipe, a file) lines are
    never wrapped or cut, as grep and jq users expect.
    """
    if color == "always":
        settings: dict[str, Any] = {
            "force_terminal": True,
            "no_color": False,
            "color_system": "standard",
        }
    elif color == "never":
        settings = {"no_color": True, "color_system": None}
    else:
        settings = {}
    from rich.console import Console

    from harmony_doctor.output.layout import UNLIMITED

    console = Console(
        highlight=False, emoji=False, markup=False, soft_wrap=False, width=width, **settings
    )
    if width is None and not console.is_terminal:
        console.width = UNLIMITED
    return console


def show(console: Console, renderable: RenderableType, soft_wrap: bool = False) -> None:
    """Print a renderable; off a terminal, without the padding rich leaves at line ends."""
    if console.is_terminal:
        console.print(renderable, soft_wrap=soft_wrap)
        return
    with console.capture() as captured:
        console.print(renderable, soft_wrap=soft_wrap)
    lines = captured.get().split("\n")
    sys.stdout.write("\n".join(line.rstrip() for line in lines))


def print_json(record: dict[str, Any]) -> None:
    import json  # not for --help

    sys.stdout.write(json.dumps(record, indent=2, ensure_ascii=True) + "\n")


def present(
    given: Presentation,
    record: Callable[[], dict[str, Any]],
    view: Callable[[], RenderableType],
    soft_wrap: bool = False,
) -> None:
    """One result on stdout: its JSON record, or its view for people (built only if shown)."""
    if given.output == "json":
        print_json(record())
    else:
        show(make_console(given.color, given.width), view(), soft_wrap=soft_wrap)
