"""`harmony-doctor rules`: the diagnosis catalogue, every code or one in full."""

from __future__ import annotations

from typing import Annotated

import typer

import harmony_doctor as hd
from harmony_doctor.cli.console import make_console, print_json, show
from harmony_doctor.cli.options import ColorOpt, FormatOpt, WidthOpt
from harmony_doctor.errors import ExitCode, InputError


def complete_code(incomplete: str) -> list[tuple[str, str]]:
    """Shell completion for CODE: every rule code starting with what was typed, with its title."""
    return [(r.code, r.title) for r in hd.list_rules() if r.code.startswith(incomplete.upper())]


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
    output: FormatOpt = "text",
    color: ColorOpt = "auto",
    width: WidthOpt = None,
) -> int:
    """List every diagnosis code, or show one with its cause and fix."""
    from harmony_doctor.output import contract
    from harmony_doctor.output.catalogue_view import rule_view, rules_view

    if code is None:
        catalogue = hd.list_rules()
        if output == "json":
            records = [contract.rule_record(r) for r in catalogue]
            print_json({"schema": "harmony-doctor.rules/1", "rules": records})
        else:
            show(make_console(color, width), rules_view(catalogue))
        return ExitCode.CLEAN
    rule = hd.find_rule(code)
    if rule is None:
        raise InputError(f"unknown rule {code!r}; 'harmony-doctor rules' lists them")
    if output == "json":
        print_json({"schema": "harmony-doctor.rules/1", "rule": contract.rule_record(rule)})
    else:
        show(make_console(color, width), rule_view(rule))
    return ExitCode.CLEAN
