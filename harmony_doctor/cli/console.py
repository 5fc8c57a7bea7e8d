"""Where commands print: a rich console made per command, renderables and JSON on stdout."""

from __future__ import annotations

import builtins
import os
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


def make_console(color: Color, width: int | None = None, file: Any = None) -> Console:
    """A console for stdout (or `file`: standard error's progress); an explicit --color wins
    over NO_COLOR and TERM.

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
        highlight=False,
        emoji=False,
        markup=False,
        soft_wrap=False,
        width=width,
        file=file,
        **settings,
    )
    if width is None and not console.is_terminal:
        console.width = UNLIMITED
    return console


# What rich reads to take an output for a terminal (or for Jupyter's), whatever isatty says.
_TERMINAL_VARIABLES = ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "JUPYTER_COLUMNS")


def writes_plain(color: Color, width: int | None = None, separators: bool = False) -> bool:
    """Whether `make_console(color, width)` would write text as it is given: standard output
    is no terminal, no colour is forced, no --width wraps, and nothing rich reads says
    otherwise (FORCE_COLOR, TTY_COMPATIBLE, Jupyter, IDLE). A view that is lines of text alone
    is then written without loading rich (`show` would write the same bytes). `separators`:
    the view draws rules, which rich means to draw with `-`, not `─`, where standard output's
    encoding is no UTF one (rich 15 does so only for a rule with a title): left to rich there."""
    if color == "always" or width is not None or "get_ipython" in vars(builtins):
        return False
    if separators and not (getattr(sys.stdout, "encoding", None) or "utf-8").lower().startswith(
        "utf"
    ):
        return False
    if any(name in os.environ for name in _TERMINAL_VARIABLES):
        return False
    if getattr(sys.stdin, "__module__", "").startswith("idlelib"):
        return False
    try:
        return not sys.stdout.isatty()
    except (AttributeError, ValueError):  # no standard output, or a closed one: rich decides
        return False


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
    """`record` as indented JSON, written in pieces of about 64 KiB: json.dumps would hold the
    encoder's millions of small strings and their join at once (a decode of one context's
    131,072 tokens peaked at 213 MB so)."""
    import json  # not for --help

    pieces: list[str] = []
    held = 0
    for piece in json.JSONEncoder(indent=2, ensure_ascii=True).iterencode(record):
        pieces.append(piece)
        held += len(piece)
        if held >= 1 << 16:
            sys.stdout.write("".join(pieces))
            pieces.clear()
            held = 0
    sys.stdout.write("".join(pieces) + "\n")


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
