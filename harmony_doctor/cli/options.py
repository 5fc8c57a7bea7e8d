"""Options that several commands share, declared once; choices come from the core's own types."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

import typer

try:  # typer >= 0.26 vendors click; older releases depend on it
    from typer._click import exceptions as click_errors
except ImportError:  # pragma: no cover - depends on the installed typer
    from click import exceptions as click_errors  # type: ignore[no-redef,import-not-found,unused-ignore]

from harmony_doctor.choices import GROUP_KEYS, InputFormat, ParseRole
from harmony_doctor.errors import OutputError

Color = Literal["auto", "always", "never"]
Format = Literal["text", "json"]
SummaryFormat = Literal["table", "json", "csv", "github"]

InputArg = Annotated[
    str,
    typer.Argument(
        metavar="INPUT",
        help="File to read; '-' or nothing reads standard input.",
        show_default=False,
    ),
]
FormatOpt = Annotated[Format, typer.Option("--format", "-f", help="Output format.")]
ColorOpt = Annotated[Color, typer.Option("--color", help="Colour: auto, always or never.")]
WidthOpt = Annotated[
    int | None,
    typer.Option(
        "--width",
        min=20,
        help="Lay the output out for N columns (default: the terminal's; off a terminal, "
        "lines are never wrapped or cut).",
        show_default=False,
    ),
]
InputFormatOpt = Annotated[
    InputFormat,
    typer.Option("--input-format", help="Force the input shape instead of detecting it."),
]
RequestOpt = Annotated[
    str | None,
    typer.Option("--request", help="Pick one request/response id when the input has several."),
]
VocabOpt = Annotated[
    Path | None,
    typer.Option("--vocab", help="o200k_base.tiktoken file or folder (default: the bundled copy)."),
]
RoleOpt = Annotated[
    ParseRole,
    typer.Option(
        "--role",
        help="assistant: a completion that starts inside an assistant header; "
        "none: the stream starts with <|start|> (prompt + completion).",
    ),
]
ExitZeroOpt = Annotated[
    bool, typer.Option("--exit-zero", help="Exit 0 even when something is found.")
]

# scan and report print the same summary.
ByOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--by",
        help=f"Group by {', '.join(GROUP_KEYS)} (comma-separated or repeated; default code).",
    ),
]
SummaryFormatOpt = Annotated[
    SummaryFormat,
    typer.Option(
        "--format",
        "-f",
        help="table, json or csv (the summary); github: Actions annotations on stdout, and "
        "a Markdown summary appended to $GITHUB_STEP_SUMMARY when it is set.",
    ),
]
PrometheusOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--prometheus",
        help="Write the counts and rates as a node-exporter textfile (FILE.prom, atomic).",
        show_default=False,
    ),
]
HtmlOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--html",
        help="Write one self-contained HTML page (totals, patterns, failures over time, "
        "origins, files) to share in an incident.",
        show_default=False,
    ),
]
SummaryCsvOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--summary-csv",
        "--summary",
        help="Write the grouped summary (.csv; .jsonl and .parquet work too).",
    ),
]
# A file option given twice would write one file and drop the other: such options take a list
# (typer keeps only the last of a repeated single option) and `once` refuses more than one.


def once(option: str, given: list[Path] | None) -> Path | None:
    """The one path a file option names; OutputError when it was given more than once."""
    if not given:
        return None
    if len(given) > 1:
        named = ", ".join(str(p) for p in given)
        raise OutputError(f"{option} given {len(given)} times ({named}): give it once")
    return given[0]


TopOpt = Annotated[int, typer.Option("--top", min=1, help="Groups shown in the table.")]

# Arguments that name files, though typed as text (`-`, URLs and globs are theirs too).
PATH_ARGUMENTS = frozenset({"source", "inputs", "paths"})


def refuse_empty_paths(command: Any) -> None:
    """Every path a built command takes refuses an empty name: `Path("")` is `.` (`scan ""`
    scanned the current folder, as an unset `$LOGDIR` gives), `explain ""` read stdin, and
    `--events ""` failed with a traceback. Checked on the raw words, before typer makes them
    paths (where "" and "." are one). A click UsageError: one line, exit 2."""
    for param in command.params:
        kind = type(param.type).__name__
        named = param.param_type_name == "argument" and param.name in PATH_ARGUMENTS
        if named or kind == "TyperPath":
            param.process_value = _checked(param, param.process_value)


def _checked(param: Any, process: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    def check(ctx: Any, value: Any) -> Any:
        words = value if isinstance(value, (list, tuple)) else [value]
        if any(isinstance(word, str) and not word for word in words):
            if param.param_type_name == "argument":
                message = "cannot read '': No such file or directory"
            else:
                message = f"{param.opts[0]} '': an empty name names no file"
            raise click_errors.UsageError(message, ctx)
        return process(ctx, value)

    return check
