"""Issue 12 bullet 3: what `--help` and `explain` on a log load (latency is benchmarked, in
benchmarks/startup.py, never asserted here)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
_HEAVY = ("tiktoken", "openai_harmony", "polars")


def _loaded_after(
    args: list[str], env: dict[str, str] | None = None, names: tuple[str, ...] = _HEAVY
) -> list[str]:
    """Which of `names` a fresh process holds after running the CLI with `args`."""
    code = (
        "import sys\n"
        "from harmony_doctor.cli import app as cli\n"
        f"try:\n    cli.main({args!r})\nexcept SystemExit:\n    pass\n"
        f"print([m for m in {names!r} if m in sys.modules], file=sys.stderr)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    import ast

    return list(ast.literal_eval(out.stderr.strip().splitlines()[-1]))


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["explain", "--help"],
        ["explain", str(SAMPLES / "vllm-traceback.log")],
        ["explain", str(SAMPLES / "other-engines.log")],  # a log without token ids
    ],
    ids=["help", "explain-help", "explain-traceback", "explain-log"],
)
def test_latency_help_and_log_explain_load_no_heavy_module(args: list[str]) -> None:
    assert _loaded_after(args) == []


def test_latency_token_explain_does_not_build_tiktoken(tmp_path: Path) -> None:
    import os

    env = dict(os.environ, HARMONY_DOCTOR_CACHE=str(tmp_path))
    loaded = _loaded_after(["explain", str(SAMPLES / "tool-call.harmony.txt")], env)
    assert "tiktoken" not in loaded and "polars" not in loaded


def test_latency_a_command_run_builds_and_imports_only_that_command() -> None:
    code = (
        "import sys\n"
        "from harmony_doctor.cli import app as cli\n"
        f"try:\n    cli.main(['explain', {str(SAMPLES / 'vllm-traceback.log')!r}])\n"
        "except SystemExit:\n    pass\n"
        "others = [c for c in cli.COMMANDS if f'harmony_doctor.cli.{c}' in sys.modules]\n"
        "print(others, file=sys.stderr)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stderr.strip().splitlines()[-1] == "['explain']"


def test_latency_help_lists_what_typer_lists_with_every_command_built() -> None:
    """--help lists commands from their docstrings without building them; the listing must be
    the one typer writes when it builds every command (flags, wrapping, order)."""
    import typer
    from typer.main import get_command

    from harmony_doctor.cli import app as cli
    from harmony_doctor.cli.funnel import command
    from tests.helpers import run

    eager = typer.Typer(
        name="harmony-doctor",
        help="Offline doctor for gpt-oss Harmony format failures.",
        add_completion=True,
        no_args_is_help=True,
        rich_markup_mode=None,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    eager.callback()(cli._root)
    for name in cli.COMMANDS:
        eager.command(name)(command(cli._function(name)))
    group = get_command(eager)
    context = group.make_context("harmony-doctor", ["--help"], resilient_parsing=True)
    expected = group.get_help(context)
    shown = run(["--help"]).stdout
    assert shown.rstrip("\n") == expected.rstrip("\n")
    assert all(f"  {name} " in shown for name in cli.COMMANDS)


@pytest.mark.parametrize(
    "given", ["ids", str(SAMPLES / "tool-call.harmony.txt"), str(SAMPLES / "vllm-requests.log")]
)
def test_latency_token_explain_loads_one_table_not_two(tmp_path: Path, given: str) -> None:
    """openai-harmony's encoding is needed for every verdict: the replay and the view take their
    token bytes from it, and the parsed ranks (a second copy of the table) are never loaded."""
    import os

    if given == "ids":
        source = tmp_path / "ids.txt"
        source.write_text("200005 35644 200008 23483 316 3684 13 200007 200006 173781 12606\n")
        given = str(source)
    code = (
        "import sys\n"
        "from harmony_doctor.cli import app as cli\n"
        "from harmony_doctor.harmony import vocab\n"
        f"try:\n    cli.main(['explain', {given!r}])\nexcept SystemExit:\n    pass\n"
        "(loaded,) = vocab._CACHE.values()\n"
        "print(sorted(k for k in ('_ranks', 'harmony_core') if k in loaded.__dict__))\n"
    )
    env = dict(os.environ, HARMONY_DOCTOR_CACHE=str(tmp_path / "cache"))
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    assert out.stdout.strip().splitlines()[-1] == "['harmony_core']"


_NEVER = ("pydantic", "openai_harmony", "importlib.metadata", "harmony_doctor.output.contract")


@pytest.mark.parametrize(
    ("args", "absent"),
    [
        (
            ["--help"],
            (
                "rich",
                "json",
                "harmony_doctor.models",
                "harmony_doctor.logs",
                "harmony_doctor.harmony.vocab",
                "harmony_doctor.output.escape",
            ),
        ),
        (
            ["explain", str(SAMPLES / "vllm-traceback.log")],
            (
                "openai_harmony.openai_harmony",
                "harmony_doctor.output.recover_view",  # its next steps follow a token stream
                "harmony_doctor.harmony.ranks",
                "harmony_doctor.harmony.spec",
                "tempfile",
                "importlib.resources",
                "harmony_doctor.models.streams",  # a log's failures are no stream's diagnosis
                "harmony_doctor.models.scan",  # nor events or tallies
                "harmony_doctor.models.salvage",
                "shlex",  # a token stream's next steps only
                "harmony_doctor.inputs.tokens",  # no ids in sight (inputs/token_sniff.py)
                "harmony_doctor.inputs.vllm_requests",  # no logged completion
                "harmony_doctor.inputs.id_lists",
            ),
        ),
        (
            ["explain", "IDS"],
            (
                "harmony_doctor.logs",
                "harmony_doctor.harmony.ranks",
                "harmony_doctor.models.salvage",
            ),
        ),
    ],
    ids=["help", "explain-traceback", "explain-ids"],
)
def test_latency_each_path_imports_only_what_it_uses(
    tmp_path: Path, args: list[str], absent: tuple[str, ...]
) -> None:
    """--help builds no record and loads no renderer; a log's explain no openai-harmony, no
    ranks cache and no stream record; an id list no log reader; no path but recover's, repro's
    and render's their records; none of them the pydantic layer of openai-harmony, package
    metadata or the JSON records when printing text."""
    import os

    if args[-1] == "IDS":
        source = tmp_path / "ids.txt"
        source.write_text("200005 35644 200008 23483 316 3684 13 200007 200006 173781 12606\n")
        args = [*args[:-1], str(source)]
    env = dict(os.environ, HARMONY_DOCTOR_CACHE=str(tmp_path / "cache"))
    assert _loaded_after(args, env, (*_NEVER, *absent)) == []


def _loaded_under(args: list[str], prefixes: tuple[str, ...]) -> list[str]:
    """The modules a fresh process holds, after running the CLI with `args`, that are one of
    `prefixes` or inside one of them."""
    code = (
        "import sys\n"
        "from harmony_doctor.cli import app as cli\n"
        f"try:\n    cli.main({args!r})\nexcept SystemExit:\n    pass\n"
        f"prefixes = {prefixes!r}\n"
        "print(sorted(m for m in sys.modules if any(m == p or m.startswith(p + '.') "
        "for p in prefixes)), file=sys.stderr)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    import ast

    return list(ast.literal_eval(out.stderr.strip().splitlines()[-1]))


# Issue 23: what `--version` and `--help` must not load (nothing of the scan stack).
_SCAN_STACK = (
    "harmony_doctor.scan",
    "harmony_doctor.logs",
    "harmony_doctor.inputs",
    "harmony_doctor.explain",
    "harmony_doctor.streams",
    *_HEAVY,
)


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["scan", "--help"]])
def test_version_and_help_import_nothing_of_the_scan_stack(args: list[str]) -> None:
    """`--version` names the scan core (native or python) without loading the scan itself;
    --help lists the commands, and `scan --help` its options, without it either."""
    assert _loaded_under(args, _SCAN_STACK) == []


# A vLLM server's start-up lines: a clean log, without requests or failures.
_STARTED = (
    "(APIServer pid=4121) INFO 11-28 10:14:50 [api_server.py:1885] vLLM API server version 0.10.1\n"
    "(APIServer pid=4121) INFO:     Started server process [4121]\n"
    "(APIServer pid=4121) INFO:     Application startup complete.\n"
)
_SERVED = (
    "(APIServer pid=4121) INFO 11-28 10:15:01 [logger.py:71] Received request chatcmpl-a1: "
    "params: SamplingParams(n=1, temperature=1.0, max_tokens=512), prompt_token_ids: None, "
    "lora_request: None.\n"
)


# What makes rich take a pipe for a terminal: unset, so that a run's output is a pipe's.
_TERMINAL_VARIABLES = ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "JUPYTER_COLUMNS")


def _piped_env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k not in _TERMINAL_VARIABLES}


@pytest.mark.parametrize("fmt", ["table", "json"])
@pytest.mark.parametrize("content", ["", _STARTED], ids=["empty", "clean"])
def test_scan_with_nothing_to_aggregate_imports_no_polars(
    tmp_path: Path, content: str, fmt: str
) -> None:
    """A scan that found no failure and counted no request has nothing for polars to
    aggregate: its summary (table or JSON) is printed without a frame, and without the
    vocabulary or openai-harmony, which no completion asked for; a log that cannot be one
    token stream is not handed to explain's reader, no hourly rate is drawn and no process
    pool started. Its lines are written without rich (off a terminal), and no table writer
    loads for a run that exports nothing; no record of events or tallies is built, and the
    standard modules a scan reaches another way (socket, hashlib, ctypes) are not loaded."""
    log = tmp_path / "server.log"
    log.write_text(content)
    unused: tuple[str, ...] = (
        "harmony_doctor.explain",
        "harmony_doctor.inputs.paste",
        "harmony_doctor.output.rate_view",
        "harmony_doctor.scan.hourly",
        "multiprocessing",  # a pool only for inputs large enough to share out
        "concurrent.futures",
        "rich",
        "harmony_doctor.output.tables",  # the CSV/JSONL/Parquet writers
        "csv",
        "harmony_doctor.output.targets",  # no output file to check
        "harmony_doctor.output.operator",  # no rate to word, no operator output
        "harmony_doctor.logs.extract",  # no failure window to read
        "harmony_doctor.scan.findings",  # no failure to make an event of, no completion
        "harmony_doctor.streams.diagnose",  # no completion to judge: neither our replay
        "harmony_doctor.harmony.replay",
        "harmony_doctor.models.scan",  # no event or tally record made
        "harmony_doctor.scan.event_files",  # no event file read (an export is told apart
        "harmony_doctor.scan.event_batches",  # by scan/own_outputs.py)
        "socket",  # the host name comes from platform (loaded by typer)
        "hashlib",  # a spill's host mark is a CRC-32
        "ctypes",  # glibc's mallopt through the extension, where it is built
        "harmony_doctor.inputs.tokens",  # no token stream in sight (inputs/token_sniff.py)
        "harmony_doctor.inputs.vllm_requests",  # no logged completion
        "harmony_doctor.inputs.id_lists",
    )
    from harmony_doctor.native import native_available

    if not native_available():
        unused = tuple(m for m in unused if m != "ctypes")
    args = ["scan", str(log), "--format", fmt]
    assert _loaded_after(args, _piped_env(), (*_HEAVY, *unused)) == []


@pytest.mark.parametrize(
    ("files", "options"),
    [
        (1, ["--width", "80"]),  # rich wraps at a width: it draws
        (1, ["--color", "always"]),
        (2, []),  # two files: the files table
    ],
    ids=["width", "color", "two-files"],
)
def test_scan_that_draws_loads_rich_but_no_table_writer(
    tmp_path: Path, files: int, options: list[str]
) -> None:
    """Lines are written without rich only where rich would write them as they are; a view
    with a table, a width or colours is rich's, and still loads no table writer."""
    logs = []
    for n in range(files):
        logs.append(tmp_path / f"server{n}.log")
        logs[-1].write_text(_STARTED)
    args = ["scan", *map(str, logs), *options]
    names = ("rich", "harmony_doctor.output.tables")
    assert _loaded_after(args, _piped_env(), names) == ["rich"]


def test_a_scan_view_drawn_by_rich_without_a_table_loads_no_table(tmp_path: Path) -> None:
    """rich's tables load where one is drawn: a clean scan printed in colour draws none."""
    log = tmp_path / "server.log"
    log.write_text(_STARTED)
    names = ("rich.console", "rich.table", "rich.rule")
    loaded = _loaded_after(["scan", str(log), "--color", "always"], _piped_env(), names)
    assert loaded == ["rich.console"]


_TOTALS = [
    {"files": 1, "bytes": 0, "lines": 0, "failures": 0},
    {"files": 1, "bytes": 1_234_567, "lines": 12_345, "failures": 0, "skipped": 0, "partial": 0},
    {"files": 1, "bytes": 999, "lines": 3, "failures": 0, "requests": 7, "rate": 0.0,
     "rate_requests": 7, "unrated": 0},
    {"files": 1, "bytes": 999, "lines": 3, "failures": 2, "requests": 7, "rate": None,
     "rate_note": "more failures than requests", "unrated": 2},
    {"files": 1, "bytes": 5_000_000_000, "lines": 9, "failures": 0, "skipped": 1, "partial": 2},
]  # fmt: skip


@pytest.mark.parametrize("totals", _TOTALS)
@pytest.mark.parametrize("title", ["scan", "report"])
def test_plain_view_is_what_rich_writes_off_a_terminal(
    totals: dict[str, object], title: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lines a summary without groups is written as, without rich, are byte for byte what
    rich writes of the same view to a pipe (through cli.console.show, as every view is)."""
    import io

    from harmony_doctor.cli.console import make_console, show
    from harmony_doctor.output.scan_view import plain_view, scan_view

    files = [{"path": "a.log", "status": "ok", "reason": None, "lines": 3, "failures": 0}]
    empty = title == "scan" and not totals["bytes"]  # a scan that read nothing says so
    plain = plain_view([], totals, files, title, empty)
    said = "Nothing was read: every input was empty." if empty else "No Harmony failures found."
    assert plain is not None and plain.endswith(said + "\n")
    written = io.StringIO()
    monkeypatch.setattr("sys.stdout", written)
    for name in _TERMINAL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    view = scan_view([], ("code",), totals, [], files, 20, title, nothing_read=empty)
    show(make_console("auto"), view)
    assert written.getvalue() == plain


def test_plain_view_declines_a_view_with_a_table() -> None:
    from harmony_doctor.output.scan_view import plain_view

    totals = {"files": 2, "bytes": 9, "lines": 3, "failures": 1}
    one = [{"path": "a.log", "status": "ok", "reason": None, "lines": 3, "failures": 0}]
    cut = [{**one[0], "status": "partial", "reason": "truncated gzip stream"}]
    group = {"code": "HD101", "count": 1, "share": 1.0}
    assert plain_view([group], totals, one, "scan") is None  # the groups table
    assert plain_view([], totals, one * 2, "scan") is None  # the files table
    assert plain_view([], totals, cut, "scan") is None  # a file not read whole is listed


@pytest.mark.parametrize("color", ["auto", "never", "always"])
@pytest.mark.parametrize("width", [None, 60])
@pytest.mark.parametrize("tty", [False, True])
@pytest.mark.parametrize(
    "variable", [None, *((v, "1") for v in _TERMINAL_VARIABLES), ("FORCE_COLOR", "")]
)
def test_writes_plain_only_where_rich_would_write_text_as_it_is(
    color: str, width: int | None, tty: bool, variable: tuple[str, str] | None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """`writes_plain` says yes only where the console `make_console` makes is no terminal,
    has no colour and does not wrap: rich itself decides the same way, or rich is used."""
    import io

    from harmony_doctor.cli.console import make_console, writes_plain
    from harmony_doctor.output.layout import UNLIMITED

    class Out(io.StringIO):
        def isatty(self) -> bool:
            return tty

    for name in _TERMINAL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    if variable is not None:
        monkeypatch.setenv(*variable)
    monkeypatch.setattr("sys.stdout", Out())
    plain = writes_plain(color, width)  # type: ignore[arg-type]
    console = make_console(color, width)  # type: ignore[arg-type]
    if plain:
        assert not console.is_terminal and console.color_system is None
        assert console.width == UNLIMITED
    assert plain == (color != "always" and width is None and not tty and variable is None)


@pytest.mark.parametrize(
    ("content", "options"),
    [
        (_STARTED + _SERVED, []),  # request tallies, no failure
        ("", ["--format", "csv"]),  # the table's header is the frame's
        ("", ["--summary-csv", "SUMMARY"]),  # an export writes the frame
    ],
    ids=["tallies", "csv", "export"],
)
def test_scan_that_aggregates_still_uses_polars(
    tmp_path: Path, content: str, options: list[str]
) -> None:
    """polars stays the one aggregation engine: tallies to sum, a CSV or an export is made
    from the frames, never from a second computation."""
    log = tmp_path / "server.log"
    log.write_text(content)
    options = [str(tmp_path / "summary.csv") if o == "SUMMARY" else o for o in options]
    assert "polars" in _loaded_after(["scan", str(log), *options])


def test_scan_with_failures_aggregates_with_polars_and_no_vocabulary() -> None:
    """A traceback's failures are grouped by polars; no completion needs the vocabulary, and
    no salvage record (recover's, repro's, render's) is built."""
    names = (*_HEAVY, "harmony_doctor.models.salvage")
    assert _loaded_after(["scan", str(SAMPLES / "vllm-traceback.log")], names=names) == ["polars"]


def test_every_record_is_named_by_models_whichever_module_builds_it() -> None:
    """models/ builds its stream and salvage records on first use: each is still
    `harmony_doctor.models.<name>`, once, and a record it does not know is an AttributeError."""
    import dataclasses

    import harmony_doctor.models as models

    for name in models.__all__:
        record = getattr(models, name)
        if isinstance(record, type) and dataclasses.is_dataclass(record):
            assert record.__qualname__ == name
            assert record.__module__.startswith("harmony_doctor.models")
            assert getattr(models, name) is record
    with pytest.raises(AttributeError):
        models.NoSuchRecord  # noqa: B018
