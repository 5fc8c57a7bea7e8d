"""The typer app: every command registered once, through the error funnel, and built by typer
only when it runs; the entry point."""

from __future__ import annotations

import importlib
import inspect
import sys
from collections.abc import Iterator, MutableMapping
from typing import Annotated, Any, NoReturn

import typer
from typer.core import TyperCommand, TyperGroup
from typer.main import get_command_from_info

try:  # typer >= 0.26 vendors click; older releases depend on it
    from typer._click import exceptions as click_errors
except ImportError:  # pragma: no cover - depends on the installed typer
    from click import exceptions as click_errors  # type: ignore[no-redef,import-not-found,unused-ignore]

from harmony_doctor.cli.funnel import (
    StdoutFailed,
    command,
    fail,
    guard_stderr,
    guard_stdout,
    interrupted,
    stdout_failed,
    unsaid_interrupt,
)
from harmony_doctor.cli.options import refuse_empty_paths
from harmony_doctor.cli.signals import answered, received
from harmony_doctor.errors import ExitCode
from harmony_doctor.version import PROGRAM, __version__

# Every command, in the order --help lists them: the function of that name in the module
# harmony_doctor.cli.<name>.
COMMANDS = (
    "decode",
    "explain",
    "grammar",
    "recover",
    "render",
    "report",
    "repro",
    "rules",
    "scan",
    "watch",
)


def _function(name: str) -> Any:
    return getattr(importlib.import_module(f"harmony_doctor.cli.{name}"), name)


class _Commands(MutableMapping[str, Any]):
    """The group's commands, each built by typer (its options read from the function's
    signature) on first use: a run builds the one command it runs, not all nine (~25 ms)."""

    def __init__(self) -> None:
        self._built: dict[str, Any] = dict.fromkeys(COMMANDS)

    def __getitem__(self, name: str) -> Any:
        built = self._built[name]
        if built is None:
            registry = typer.Typer()
            registry.command(name)(command(_function(name)))
            built = self._built[name] = get_command_from_info(
                registry.registered_commands[0],
                pretty_exceptions_short=app.pretty_exceptions_short,
                rich_markup_mode=None,
            )
            refuse_empty_paths(built)
        return built

    def __setitem__(self, name: str, built: Any) -> None:
        self._built[name] = built

    def __delitem__(self, name: str) -> None:
        del self._built[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._built)

    def __len__(self) -> int:
        return len(self._built)


class _LazyGroup(TyperGroup):
    """typer's group over `_Commands`; its command list shows each command's first docstring
    line without building the command."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.commands = _Commands()

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        # What typer's listing reads of a command (its help and flags), and nothing else.
        listed = [TyperCommand(name=n, help=inspect.getdoc(_function(n))) for n in COMMANDS]
        TyperGroup(name=self.name, commands=listed).format_commands(ctx, formatter)


app = typer.Typer(
    name=PROGRAM,
    cls=_LazyGroup,
    help="Offline doctor for gpt-oss Harmony format failures.",
    add_completion=True,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        from harmony_doctor.advanced import scan_core

        typer.echo(f"{PROGRAM} {__version__} (scan core: {scan_core()})")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version.")
    ] = False,
) -> None:
    """Offline doctor for gpt-oss Harmony format failures."""


def main(argv: list[str] | None = None) -> NoReturn:
    """Entry point: usage errors become one line on stderr and exit 2, like the rest; standard
    output failing, from a command, --help or the last flush, ends through the funnel's exit;
    SIGTERM and SIGHUP unwind as Ctrl-C does (cli/signals.py)."""
    guard_stderr()
    guard_stdout()
    with answered():
        try:
            code = _dispatch(argv)
            sys.stdout.flush()
        except StdoutFailed as exc:
            code = stdout_failed(exc)
        except KeyboardInterrupt as exc:  # outside a command (as typer parses, the last flush)
            code = interrupted(exc)
    sys.exit(code)


def _dispatch(argv: list[str] | None) -> int:
    try:
        code = app(args=argv, prog_name=PROGRAM, standalone_mode=False)
    except click_errors.NoArgsIsHelpError as exc:
        sys.stdout.write(exc.ctx.get_help() + "\n")
        code = ExitCode.CLEAN
    except click_errors.UsageError as exc:
        hint = f" (see '{exc.ctx.command_path} --help')" if exc.ctx else ""
        code = fail(exc.format_message().replace("Value error, ", "") + hint)
    except typer.Abort as exc:  # click's word for an interrupt outside the command
        code = interrupted(exc.__cause__)
    except click_errors.ClickException as exc:
        code = fail(exc.format_message())
    code = int(code) if isinstance(code, int) else 0
    if unsaid_interrupt(code):
        code = interrupted(received())
    return code
