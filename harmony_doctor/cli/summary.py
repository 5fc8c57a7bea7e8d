"""The summary scan and report both print: a table, JSON or CSV on stdout."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from harmony_doctor.cli.console import make_console, print_json, show
from harmony_doctor.cli.options import Color, SummaryFormat

if TYPE_CHECKING:
    import polars as pl


def show_summary(
    table: pl.DataFrame,
    keys: tuple[str, ...],
    totals: dict[str, Any],
    days: list[tuple[str, int]],
    files: list[dict[str, Any]],
    output: SummaryFormat,
    top: int,
    color: Color,
    width: int | None = None,
    title: str = "scan",
) -> None:
    """The summary on stdout as a table, JSON or CSV (scan and report print alike)."""
    from harmony_doctor.output import files as export
    from harmony_doctor.output.scan_view import scan_view

    if output == "json":
        schema = f"harmony-doctor.{title}/1"
        groups = table.to_dicts()
        print_json(
            {"schema": schema, "by": list(keys), "totals": totals, "groups": groups, "files": files}
        )
    elif output == "csv":
        export.write_csv(table.columns, table.iter_rows(), sys.stdout)
    else:
        console = make_console(color, width)
        groups = table.to_dicts()
        view = scan_view(groups, keys, totals, days, files, top, title)
        show(console, view)
