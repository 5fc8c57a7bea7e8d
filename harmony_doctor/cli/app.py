"""The typer app: registers every command once, through the error funnel; the entry point."""

from __future__ import annotations

import sys
from typing import Annotated, NoReturn

import typer

try:  # typer >= 0.26 vendors click; older releases depend on it
    from typer._click import exceptions as click_errors
except ImportError:  # pragma: no cover - depends on the installed typer
    from click import exceptions as click_errors  # type: ignore[no-redef,import-not-found,unused-ignore]

from harmony_doctor.cli import decode, explain, grammar, recover, render, report, repro, rules, scan
from harmony_doctor.cli.funnel import PROGRAM, command, fail, note, quiet_stdout
from harmony_doctor.errors import ExitCode
from harmony_doctor.version import __version__

app = typer.Typer(
    name=PROGRAM,
    help="Offline doctor for gpt-oss Harmony format failures.",
    add_completion=True,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)

for name, function in (
    ("decode", decode.decode),
    ("explain", explain.explain),
    ("grammar", grammar.grammar),
    ("recover", recover.recover),
    ("render", render.render),
    ("report", report.report),
    ("repro", repro.repro),
    ("rules", rules.rules),
    ("scan", scan.scan),
):
    app.command(name)(command(function))


def _version(value: bool) -> None:
    if value:
        from harmony_doctor.scan.source import core_name

        typer.echo(f"{PROGRAM} {__version__} (scan core: {core_name()})")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version.")
    ] = False,
) -> None:
    """Offline doctor for gpt-oss Harmony format failures."""


def main(argv: list[str] | None = None) -> NoReturn:
    """Entry point: usage errors become one line on stderr and exit 2, like the rest."""
    try:
        code = app(args=argv, prog_name=PROGRAM, standalone_mode=False)
        sys.stdout.flush()
    except click_errors.NoArgsIsHelpError as exc:
        sys.stdout.write(exc.ctx.get_help() + "\n")
        code = ExitCode.CLEAN
    except click_errors.UsageError as exc:
        hint = f" (see '{exc.ctx.command_path} --help')" if exc.ctx else ""
        code = fail(exc.format_message().replace("Value error, ", "") + hint)
    except typer.Abort:
        note("interrupted")
        code = ExitCode.INTERRUPTED
    except click_errors.ClickException as exc:
        code = fail(exc.format_message())
    except BrokenPipeError:
        code = quiet_stdout()
    sys.exit(int(code) if isinstance(code, int) else 0)
