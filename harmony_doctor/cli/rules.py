"""`harmony-doctor rules`: the diagnosis catalogue, every code or one in full."""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Annotated, Any, Literal, assert_never

import typer

import harmony_doctor as hd
from harmony_doctor import advanced
from harmony_doctor.cli.console import make_console, print_json, show
from harmony_doctor.cli.options import ColorOpt, WidthOpt
from harmony_doctor.errors import ExitCode, InputError

if TYPE_CHECKING:
    from rich.console import RenderableType

# `rules` alone writes Markdown (the codes reference, docs/codes.md): its own choice of formats.
RulesFormat = Literal["text", "json", "markdown"]
RulesFormatOpt = Annotated[
    RulesFormat,
    typer.Option(
        "--format",
        "-f",
        help="text, json, or markdown (the codes reference: docs/codes.md is this output).",
    ),
]


def complete_code(incomplete: str) -> list[tuple[str, str]]:
    """Shell completion for CODE: every rule code starting with what was typed, with its title."""
    return [(r.code, r.title) for r in hd.rules() if r.code.startswith(incomplete.upper())]


def rules(
    code: Annotated[
        str | None,
        typer.Argument(
            metavar="CODE",
            help="Show one rule in full (HD101, hd205 ...).",
            show_default=False,
            autocompletion=complete_code,
        ),
    ] = None,
    output: RulesFormatOpt = "text",
    color: ColorOpt = "auto",
    width: WidthOpt = None,
) -> int:
    """List every diagnosis code, or show one with its cause and fix (--format markdown: the
    codes reference, docs/codes.md)."""
    from harmony_doctor.output import catalogue_view, codes_markdown, contract

    if code is None:
        catalogue = hd.rules()
        record: dict[str, Any] = {"rules": [contract.rule_record(r) for r in catalogue]}
        markdown = partial(codes_markdown.codes_page, catalogue)
        view: Callable[[], RenderableType] = partial(catalogue_view.rules_view, catalogue)
    else:
        rule = advanced.find_rule(code)
        if rule is None:
            raise InputError(f"unknown rule {code!r}; 'harmony-doctor rules' lists them")
        record = {"rule": contract.rule_record(rule)}
        markdown = partial(codes_markdown.code_section, rule)
        view = partial(catalogue_view.rule_view, rule)
    match output:
        case "json":
            print_json({"schema": "harmony-doctor.rules/1", **record})
        case "markdown":
            sys.stdout.write(markdown())
        case "text":
            show(make_console(color, width), view())
        case _:
            assert_never(output)
    return ExitCode.CLEAN
