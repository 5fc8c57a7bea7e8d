"""Where commands print: a rich console made per command, renderables and JSON on stdout."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

from rich.console import Console, RenderableType

from harmony_doctor.cli.options import Color, Format


def make_console(color: Color) -> Console:
    """A console for stdout; an explicit --color wins over NO_COLOR and TERM."""
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
    return Console(highlight=False, emoji=False, markup=False, soft_wrap=False, **settings)


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
    sys.stdout.write(json.dumps(record, indent=2, ensure_ascii=True) + "\n")


def present(
    output: Format,
    color: Color,
    record: Callable[[], dict[str, Any]],
    view: Callable[[], RenderableType],
    soft_wrap: bool = False,
) -> None:
    """One result on stdout: its JSON record, or its view for people (built only if shown)."""
    if output == "json":
        print_json(record())
    else:
        show(make_console(color), view(), soft_wrap=soft_wrap)
