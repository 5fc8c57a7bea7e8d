"""The typer app: options -> one core call -> report -> exit code; nothing else."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

try:  # typer >= 0.29 vendors click; older releases depend on it
    from typer._click import exceptions as click_errors
except ImportError:  # pragma: no cover - depends on the installed typer
    from click import exceptions as click_errors  # type: ignore[no-redef,import-not-found,unused-ignore]

from harmony_doctor import __version__
from harmony_doctor.errors import DoctorError, ExitCode, InputError

if TYPE_CHECKING:
    from harmony_doctor.harmony.vocab import Vocab
    from harmony_doctor.models import TokenInput

app = typer.Typer(
    name="harmony-doctor",
    help="Offline doctor for gpt-oss Harmony format failures.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


class Color(StrEnum):
    auto = "auto"
    always = "always"
    never = "never"


class Format(StrEnum):
    text = "text"
    json = "json"


class InputFormatOption(StrEnum):
    auto = "auto"
    json = "json"
    ids = "ids"
    jsonl = "jsonl"
    vllm_log = "vllm-log"
    text = "text"


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
InputFormatOpt = Annotated[
    InputFormatOption,
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


def _version(value: bool) -> None:
    if value:
        typer.echo(f"harmony-doctor {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version.")
    ] = False,
) -> None:
    """Offline doctor for gpt-oss Harmony format failures."""


# --- plumbing --------------------------------------------------------------------------------


def _fail(message: str) -> NoReturn:
    line = " ".join(message.split())
    line = "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in line)
    sys.stderr.write(f"harmony-doctor: error: {line}\n")
    raise typer.Exit(ExitCode.ERROR)


@contextlib.contextmanager
def error_funnel() -> Iterator[None]:
    """The one place that maps exceptions to exit codes."""
    try:
        yield
    except DoctorError as exc:
        _fail(str(exc))
    except KeyboardInterrupt:
        sys.stderr.write("harmony-doctor: interrupted\n")
        raise typer.Exit(ExitCode.INTERRUPTED) from None
    except BrokenPipeError:
        with contextlib.suppress(OSError):
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - silence the flush at exit
        raise typer.Exit(ExitCode.CLEAN) from None


def read_input(source: str) -> tuple[str, str]:
    """(text, label) of a file or of standard input."""
    if source in ("", "-"):
        if sys.stdin is None or sys.stdin.isatty():
            raise InputError("no input: give a file, or pipe text to standard input")
        data = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read()
        label = "<stdin>"
    else:
        path = Path(source)
        if path.is_dir():
            raise InputError(f"{source} is a directory; explain and decode read one file")
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise InputError(f"cannot read {source}: {exc.strerror or exc}") from None
        label = source
    text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data
    return text, label


def read_tokens(
    source: str, input_format: InputFormatOption, request: str | None, vocab_path: Path | None
) -> tuple[TokenInput, str, Vocab]:
    """The token stream a command was given, read and parsed; its label; the vocabulary."""
    from harmony_doctor.harmony.vocab import load_vocab
    from harmony_doctor.inputs import tokens as ingest

    text, label = read_input(source)
    vocab = load_vocab(vocab_path)
    return ingest.parse_tokens(text, vocab.encode, input_format.value, request), label, vocab


def make_console(color: Color, stderr: bool = False) -> Any:
    from rich.console import Console

    # An explicit --color wins over NO_COLOR and TERM; auto leaves both to rich.
    if color is Color.always:
        settings: dict[str, Any] = {"force_terminal": True, "no_color": False}
        settings["color_system"] = "standard"
    elif color is Color.never:
        settings = {"no_color": True, "color_system": None}
    else:
        settings = {}
    return Console(
        stderr=stderr,
        highlight=False,
        emoji=False,
        markup=False,
        **settings,
        soft_wrap=False,
    )


def emit(console: Any, renderable: Any, soft_wrap: bool = False) -> None:
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


# --- commands --------------------------------------------------------------------------------
# Each subcommand lives in harmony_doctor/cli/NAME.py and registers itself on `app`.

from harmony_doctor.cli import decode as _decode  # noqa: E402, F401
from harmony_doctor.cli import explain as _explain  # noqa: E402, F401
from harmony_doctor.cli import grammar as _grammar  # noqa: E402, F401
from harmony_doctor.cli import recover as _recover  # noqa: E402, F401
from harmony_doctor.cli import render as _render  # noqa: E402, F401
from harmony_doctor.cli import report as _report  # noqa: E402, F401
from harmony_doctor.cli import repro as _repro  # noqa: E402, F401
from harmony_doctor.cli import rules as _rules  # noqa: E402, F401
from harmony_doctor.cli import scan as _scan  # noqa: E402, F401


def main(argv: list[str] | None = None) -> NoReturn:
    """Entry point: usage errors become one line on stderr and exit 2, like the rest."""
    try:
        code = app(args=argv, prog_name="harmony-doctor", standalone_mode=False)
    except click_errors.NoArgsIsHelpError as exc:
        sys.stdout.write(exc.ctx.get_help() + "\n")
        code = ExitCode.CLEAN
    except click_errors.UsageError as exc:
        hint = f" (see 'harmony-doctor {exc.ctx.info_name} --help')" if exc.ctx else ""
        sys.stderr.write(f"harmony-doctor: error: {exc.format_message()}{hint}\n")
        code = ExitCode.ERROR
    except typer.Abort:
        sys.stderr.write("harmony-doctor: interrupted\n")
        code = ExitCode.INTERRUPTED
    except click_errors.ClickException as exc:
        sys.stderr.write(f"harmony-doctor: error: {exc.format_message()}\n")
        code = ExitCode.ERROR
    sys.exit(int(code) if isinstance(code, int) else 0)
