"""`harmony-doctor rules`: the diagnosis catalogue, every code or one in full."""

from __future__ import annotations

from typing import Annotated

import typer

from harmony_doctor.cli.app import (
    Color,
    ColorOpt,
    Format,
    FormatOpt,
    app,
    emit,
    error_funnel,
    make_console,
    print_json,
)
from harmony_doctor.errors import InputError


@app.command("rules")
def rules_command(
    code: Annotated[
        str | None,
        typer.Argument(
            metavar="CODE", help="Show one rule in full (HD101, hd205 ...).", show_default=False
        ),
    ] = None,
    output: FormatOpt = Format.text,
    color: ColorOpt = Color.auto,
) -> None:
    """List every diagnosis code, or show one with its cause and fix."""
    with error_funnel():
        from harmony_doctor.output import contract as serialize
        from harmony_doctor.output.catalogue_view import rule_view, rules_view
        from harmony_doctor.rules import RULES

        catalogue = sorted(RULES.values(), key=lambda r: r.code)
        if code is None:
            if output is Format.json:
                print_json(
                    {
                        "schema": "harmony-doctor.rules/1",
                        "rules": [serialize.rule_record(r) for r in catalogue],
                    }
                )
            else:
                emit(make_console(color), rules_view(catalogue))
            return
        rule = RULES.get(code.strip().upper())
        if rule is None:
            raise InputError(f"unknown rule {code!r}; 'harmony-doctor rules' lists them")
        if output is Format.json:
            print_json({"schema": "harmony-doctor.rules/1", "rule": serialize.rule_record(rule)})
        else:
            emit(make_console(color), rule_view(rule))
