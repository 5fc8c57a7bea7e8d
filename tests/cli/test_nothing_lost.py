"""Nothing lost, nothing hidden: no output replaces an input or another output."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import IO, Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.fuzz_inputs import hostile_text
from tests.helpers import SAMPLES, run

LOG = (SAMPLES / "vllm-requests.log").read_bytes()  # a log with failures and request counts


def _refused(args: list[str], *names: str) -> None:
    """The run exits 2 with one line on stderr naming each of `names`, and prints nothing."""
    result = run(args)
    assert result.exit_code == 2, result
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("harmony-doctor: error: ")
    for name in names:
        assert name in result.stderr


# --- 1. an output path that names an input -------------------------------------------------


@pytest.mark.parametrize(
    ("option", "name"),
    [
        ("--events", "app.jsonl"),
        ("--summary-csv", "app.csv"),
        ("--prometheus", "app.prom"),
        ("--html", "app.html"),
    ],
)
def test_scan_refuses_to_write_over_its_input(tmp_path: Path, option: str, name: str) -> None:
    log = tmp_path / name
    log.write_bytes(LOG)
    _refused(["scan", str(log), option, str(log)], f"{option} {log}", f"the input {log}")
    assert log.read_bytes() == LOG


@pytest.mark.parametrize("spelling", ["dot", "symlink", "hardlink"])
def test_the_same_file_under_another_name_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spelling: str
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("app.jsonl").write_bytes(LOG)
    if spelling == "dot":
        output = "./app.jsonl"
    elif spelling == "symlink":
        Path("link.jsonl").symlink_to("app.jsonl")
        output = "link.jsonl"
    else:
        os.link("app.jsonl", "hard.jsonl")
        output = "hard.jsonl"
    _refused(["scan", "app.jsonl", "--events", output], "the input app.jsonl")
    _refused(["scan", output, "--events", "app.jsonl"], "--events app.jsonl")
    assert Path("app.jsonl").read_bytes() == LOG


def test_a_file_the_folder_scan_would_read_is_refused(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "app.log").write_bytes(LOG)
    (logs / "old.csv").write_bytes(LOG)  # a log, whatever its name says
    _refused(["scan", str(logs), "--events", str(logs / "old.csv")], "the input")
    assert (logs / "old.csv").read_bytes() == LOG
    # Left out by --glob, it is not read: writing it loses no input.
    kept = run(["scan", str(logs), "-j", "1", "-g", "*.log", "--events", str(logs / "old.csv")])
    assert kept.exit_code == 1, kept.stderr
    assert (logs / "old.csv").read_bytes().startswith(b"file,line,")


def test_scan_writes_its_events_into_the_folder_it_scans_again_and_again(tmp_path: Path) -> None:
    """An earlier export in the scanned folder is not read (scan leaves its exports out), so the
    next run may replace it."""
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "app.log").write_bytes(LOG)
    events = logs / "events.csv"
    for _ in range(2):
        result = run(["scan", str(logs), "-j", "1", "--events", str(events), "-f", "json"])
        assert result.exit_code == 1, result.stderr
    assert "ignored" in result.stderr and events.read_bytes().startswith(b"file,line,")


def test_standard_input_from_a_file_is_an_input(tmp_path: Path) -> None:
    log = tmp_path / "app.jsonl"
    log.write_bytes(LOG)
    with log.open("rb") as stdin:
        done = subprocess.run(
            [sys.executable, "-m", "harmony_doctor", "scan", "-", "--events", str(log)],
            stdin=stdin,
            capture_output=True,
            check=False,
        )
    assert done.returncode == 2 and done.stdout == b""
    assert done.stderr.decode().count("\n") == 1 and "is the input <stdin>" in done.stderr.decode()
    assert log.read_bytes() == LOG


def test_nothing_is_read_before_the_refusal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harmony_doctor.scan import reports, service

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("an input was read before the outputs were checked")

    monkeypatch.setattr(service, "scan_inputs", never)
    monkeypatch.setattr(reports, "summarize_event_files", never)
    log = tmp_path / "app.jsonl"
    log.write_bytes(LOG)
    _refused(["scan", str(log), "--events", str(log)], "the input")
    _refused(["report", str(log), "--summary-csv", str(log)], "the input")


def test_report_refuses_to_write_over_its_events_or_their_counts(tmp_path: Path) -> None:
    log, events = tmp_path / "app.log", tmp_path / "ev.csv"
    log.write_bytes(LOG)
    assert run(["scan", str(log), "-j", "1", "--events", str(events)]).exit_code == 1
    tallies = tmp_path / "ev.requests.csv"
    before = events.read_bytes(), tallies.read_bytes()
    _refused(["report", str(events), "--summary-csv", str(events)], "the input")
    _refused(["report", str(events), "--summary-csv", str(tallies)], "request counts beside")
    assert (events.read_bytes(), tallies.read_bytes()) == before


def test_github_step_summary_over_an_input_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "app.log"
    log.write_bytes(LOG)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(log))
    _refused(["scan", str(log), "-f", "github"], "$GITHUB_STEP_SUMMARY", "the input")
    assert log.read_bytes() == LOG


@pytest.mark.parametrize("option", ["--events", "--summary-csv", "--html", "--prometheus"])
def test_a_file_option_given_twice_is_refused_not_dropped(tmp_path: Path, option: str) -> None:
    log = tmp_path / "app.log"
    log.write_bytes(LOG)
    suffix = {"--html": ".html", "--prometheus": ".prom"}.get(option, ".csv")
    first, second = tmp_path / f"a{suffix}", tmp_path / f"b{suffix}"
    _refused(["scan", str(log), option, str(first), option, str(second)], str(first), str(second))
    assert not first.exists() and not second.exists()


def test_two_outputs_that_are_one_file_are_refused(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    log.write_bytes(LOG)
    events = tmp_path / "out.csv"
    # The request counts go beside the events, in out.requests.csv.
    args = ["scan", str(log), "--events", str(events)]
    _refused([*args, "--summary-csv", str(tmp_path / "out.requests.csv")], "the same file")
    _refused([*args, "--summary-csv", f"{tmp_path}/./out.csv"], "the same file")
    assert not events.exists()


# --- 2. standard output on a full device or a closed pipe ---------------------------------

SEED = str(SAMPLES / "seed-multiturn-completion.json")
FULL = Path("/dev/full")  # Linux: every write fails with ENOSPC


COMMANDS = {  # one run of each command (and of the app's own pages) that writes to stdout
    "app": [],
    "help": ["--help"],
    "version": ["--version"],
    "scan-help": ["scan", "--help"],
    "decode": ["decode", SEED],
    "explain": ["explain", str(SAMPLES / "vllm-traceback.log")],
    "grammar": ["grammar"],
    "recover": ["recover", SEED],
    "render": ["render", str(SAMPLES / "seed-chat.json")],
    "report": ["report", "{events}"],
    "repro": ["repro", SEED, "-o", "{tmp}/bundle"],
    "rules": ["rules"],
    "scan": ["scan", "-j", "1", "{log}"],
}


def _command(tmp_path: Path, name: str) -> list[str]:
    log, events = tmp_path / "app.log", tmp_path / "events.jsonl"
    log.write_bytes(LOG)
    if name == "report":
        made = run(["scan", str(log), "-j", "1", "--events", str(events), "--exit-zero"])
        assert made.exit_code == 0, made.stderr
    return [a.format(log=log, events=events, tmp=tmp_path) for a in COMMANDS[name]]


def _cli(args: list[str], stdout: int | IO[bytes]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "harmony_doctor", *args],
        stdout=stdout,
        stderr=subprocess.PIPE,
        check=False,
    )


def _tokens(tmp_path: Path, count: int) -> Path:
    """A token list whose decoded output is far larger than a pipe's buffer."""
    tokens = tmp_path / "tokens.json"
    tokens.write_text(str([200005, 17196, 200008] + [12194] * count + [200002]))
    return tokens


@pytest.mark.skipif(not FULL.exists(), reason="no /dev/full on this system")
@pytest.mark.parametrize("name", COMMANDS)
def test_a_full_standard_output_is_one_line_and_exit_2(tmp_path: Path, name: str) -> None:
    args = _command(tmp_path, name)
    with FULL.open("wb") as full:
        done = _cli(args, stdout=full)
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        b"harmony-doctor: error: cannot write to standard output: No space left on device\n"
    )


@pytest.mark.parametrize("args", [["rules"], ["--help"]])
def test_a_standard_output_closed_at_start_is_one_line_and_exit_2(args: list[str]) -> None:
    """`harmony-doctor rules >&-`: Python starts with no sys.stdout at all."""
    done = subprocess.run(
        ["sh", "-c", 'exec "$0" -m harmony_doctor "$@" >&-', sys.executable, *args],
        stderr=subprocess.PIPE,
        check=False,
    )
    assert done.returncode == 2
    assert (
        done.stderr
        == b"harmony-doctor: error: cannot write to standard output: Bad file descriptor\n"
    )


def test_a_standard_error_closed_at_start_keeps_the_exit_codes(tmp_path: Path) -> None:
    """`harmony-doctor scan x 2>&-`: Python starts with no sys.stderr; nothing can be said, and
    the exit code still says it all (scan failed on the missing stream, exit 1 on a clean log)."""
    clean, failing = tmp_path / "clean.log", tmp_path / "failing.log"
    clean.write_text("nothing to see\n")
    failing.write_text("openai_harmony.HarmonyError: Unknown role: assistantassistant\n")
    cases = [(["scan", str(clean)], 0), (["scan", str(failing)], 1), (["explain", "nofile"], 2)]
    for args, code in cases:
        done = subprocess.run(
            ["sh", "-c", 'exec "$0" -m harmony_doctor "$@" 2>&-', sys.executable, *args],
            stdout=subprocess.DEVNULL,
            check=False,
        )
        assert done.returncode == code, args


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".parquet"])
def test_report_with_stdin_and_stderr_closed_at_start_ends(tmp_path: Path, suffix: str) -> None:
    """`harmony-doctor report ev.csv <&- 2>&-` (a cron job's descriptors): report hung for
    ever, deaf to SIGTERM. With 0 and 2 closed, /dev/null for sys.stderr took descriptor 0,
    polars' runtime put its epoll descriptor at 2, and silencing polars' stderr (dup2 over 2)
    replaced it. The harness's timeout only ends a hung run; the exit code and the summary
    are what is checked."""
    events = tmp_path / f"ev{suffix}"
    wrote = run(["scan", str(SAMPLES / "vllm-requests.log"), "--events", str(events)])
    assert wrote.exit_code == 1 and events.exists(), wrote
    closed = 'exec "$0" -m harmony_doctor "$@" <&- 2>&-'
    done = subprocess.run(
        ["sh", "-c", closed, sys.executable, "report", str(events)],
        stdout=subprocess.PIPE,
        check=False,
        timeout=120,
    )
    assert done.returncode == 1
    assert done.stdout.startswith(b"harmony-doctor report  1 file")
    assert b" 1 failure " in done.stdout.split(b"\n")[0]


@pytest.mark.skipif(not FULL.exists(), reason="no /dev/full on this system")
def test_a_write_error_in_the_middle_of_the_output_ends_the_same_way(tmp_path: Path) -> None:
    """Past the first buffer (8 KiB), the write fails inside the command, not at the last flush."""
    with FULL.open("wb") as full:
        done = _cli(["decode", "--tokens", str(_tokens(tmp_path, 20_000))], stdout=full)
    assert done.returncode == 2
    assert done.stderr.count(b"\n") == 1 and b"No space left on device" in done.stderr


@pytest.mark.skipif(not FULL.exists(), reason="no /dev/full on this system")
def test_other_errors_are_not_taken_for_standard_output_failing(tmp_path: Path) -> None:
    with FULL.open("wb") as full:
        done = _cli(["explain", str(tmp_path / "nope.log")], stdout=full)
    assert done.returncode == 2
    assert b"nope.log" in done.stderr and b"standard output" not in done.stderr


@pytest.mark.parametrize("name", COMMANDS)
def test_a_pipe_closed_before_the_output_exits_141_quietly(tmp_path: Path, name: str) -> None:
    args = _command(tmp_path, name)
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = _cli(args, stdout=write_end)
    finally:
        os.close(write_end)
    assert done.returncode == 141, done.stderr
    assert done.stderr == b""


def _pipes_report_a_reader_that_leaves() -> bool:
    """Whether writing to a pipe whose reader read a little and left fails (EPIPE), as on
    Linux and macOS; some sandboxes take the bytes all the same."""
    child = "import sys, time; time.sleep(0.3); sys.stdout.write('x' * 300_000)"
    with subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE) as proc:
        assert proc.stdout is not None
        proc.stdout.read(10)
        proc.stdout.close()
        return proc.wait() != 0


@pytest.mark.parametrize("transport", ["pipe", "socket"])
@pytest.mark.parametrize(
    ("args", "count"),  # tokens enough for 100-200 KB of output, past any buffer in the way
    [
        (["decode", "--tokens"], 5_000),
        (["decode", "--format", "json"], 40_000),
        (["decode"], 100_000),
    ],
    ids=["table", "json", "text"],
)
def test_a_reader_that_leaves_after_a_partial_read_gives_141_quietly(
    tmp_path: Path, args: list[str], count: int, transport: str
) -> None:
    """`harmony-doctor decode ... | head -c 100`: the reader leaves mid-output. A socket's
    reader that leaves is reported everywhere, a pipe's not in every sandbox."""
    if transport == "pipe" and not _pipes_report_a_reader_that_leaves():
        pytest.skip("this system's pipes do not report a reader that leaves mid-stream")
    command = [sys.executable, "-m", "harmony_doctor", *args, str(_tokens(tmp_path, count))]
    if transport == "pipe":
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert proc.stdout is not None
        assert len(proc.stdout.read(100)) == 100
        proc.stdout.close()
    else:
        reader, writer = socket.socketpair()
        for end, option in ((reader, socket.SO_RCVBUF), (writer, socket.SO_SNDBUF)):
            end.setsockopt(socket.SOL_SOCKET, option, 8192)  # past a pipe's 64 KiB all the same
        proc = subprocess.Popen(command, stdout=writer.fileno(), stderr=subprocess.PIPE)
        writer.close()
        assert len(reader.recv(100)) > 0
        reader.close()
    _, err = proc.communicate()
    assert proc.returncode == 141, err
    assert err == b""


@pytest.mark.skipif(not FULL.exists(), reason="no /dev/full on this system")
@pytest.mark.parametrize("command", ["scan", "report"])
def test_file_outputs_are_written_when_standard_output_fails(tmp_path: Path, command: str) -> None:
    log, events = tmp_path / "app.log", tmp_path / "in.csv"
    log.write_bytes(LOG)
    assert run(["scan", str(log), "-j", "1", "--events", str(events)]).exit_code == 1
    source = [str(log), "-j", "1"] if command == "scan" else [str(events)]
    outputs = {
        "--summary-csv": tmp_path / "summary.csv",
        "--html": tmp_path / "page.html",
        "--prometheus": tmp_path / "counts.prom",
    }
    if command == "scan":
        outputs["--events"] = tmp_path / "events.csv"
    asked = [part for option, path in outputs.items() for part in (option, str(path))]
    with FULL.open("wb") as full:
        done = _cli([command, *source, *asked], stdout=full)
    assert done.returncode == 2 and b"standard output" in done.stderr
    for path in outputs.values():
        assert path.stat().st_size > 0, path


# --- 3. repro -o DIR over an existing bundle -----------------------------------------------


@pytest.mark.parametrize("copy", ["--copy-vocab", "--no-copy-vocab"])
def test_repro_refuses_to_overwrite_a_bundle_unless_forced(tmp_path: Path, copy: str) -> None:
    out = tmp_path / "bundle"
    out.mkdir()
    (out / "ISSUE.md").write_text("my notes on the issue\n")
    _refused(["repro", SEED, "-o", str(out), copy], str(out), "ISSUE.md", "--force")
    assert (out / "ISSUE.md").read_text() == "my notes on the issue\n"
    assert sorted(p.name for p in out.iterdir()) == ["ISSUE.md"]  # nothing else written
    # --force replaces a bundle this tool wrote, not a file of the user's with a bundle's name
    _refused(["repro", SEED, "-o", str(out), copy, "--force"], "ISSUE.md", "--force")
    assert (out / "ISSUE.md").read_text() == "my notes on the issue\n"
    (out / "ISSUE.md").unlink()
    assert run(["repro", SEED, "-o", str(out), copy]).exit_code == 0
    forced = run(["repro", SEED, "-o", str(out), copy, "--force"])
    assert forced.exit_code == 0, forced.stderr
    assert (out / "ISSUE.md").read_text().startswith("#")


@pytest.mark.parametrize("name", ["tokens.json", "ISSUE.md"])
def test_repro_force_never_replaces_its_input(tmp_path: Path, name: str) -> None:
    """`repro DIR/tokens.json -o DIR --force` (a bundle shrunk again where it lies) must not
    replace what it reads, though this tool wrote it."""
    out = tmp_path / "bundle"
    assert run(["repro", SEED, "-o", str(out), "--no-copy-vocab"]).exit_code == 0
    given = out / name
    if name == "ISSUE.md":  # an input of another shape, under a bundle file's name
        given.write_text(Path(SEED).read_text())
    before = given.read_bytes()
    _refused(["repro", str(given), "-o", str(out), "--no-copy-vocab", "--force"], name)
    assert given.read_bytes() == before


def test_write_repro_overwrite_refuses_the_input_and_files_not_its_own(tmp_path: Path) -> None:
    import harmony_doctor as hd
    from harmony_doctor.errors import OutputError

    small = hd.shrink(hd.parse_tokens(Path(SEED).read_text()), budget=2_000)
    out = tmp_path / "bundle"
    written = hd.write_repro(small, out, copy_vocab=False)
    tokens = out / "tokens.json"
    with pytest.raises(OutputError, match=r"tokens\.json"):
        hd.write_repro(small, out, copy_vocab=False, overwrite=True, label=str(tokens))
    (out / "repro.py").write_text("print('mine')\n")
    with pytest.raises(OutputError, match=r"repro\.py"):
        hd.write_repro(small, out, copy_vocab=False, overwrite=True)
    assert (out / "repro.py").read_text() == "print('mine')\n"
    (out / "repro.py").unlink()
    assert hd.write_repro(small, out, copy_vocab=False, overwrite=True) == written


def test_repro_into_a_folder_without_a_bundle_writes(tmp_path: Path) -> None:
    out = tmp_path / "bundle"
    out.mkdir()
    (out / "notes.txt").write_text("kept\n")  # not a bundle file
    assert run(["repro", SEED, "-o", str(out)]).exit_code == 0
    assert (out / "notes.txt").read_text() == "kept\n" and (out / "tokens.json").is_file()
    again = run(["repro", SEED, "-o", str(out)])
    assert again.exit_code == 2 and "already there" in again.stderr


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_events_sidecar_never_replaces_a_file_scan_did_not_write(
    tmp_path: Path, suffix: str
) -> None:
    """`--events X.csv` also writes X.requests.csv: over an earlier one, fine; over any other
    file (the user never named it), refused before anything is read."""
    log = tmp_path / "app.log"
    log.write_bytes(LOG)
    events = tmp_path / f"x{suffix}"
    sidecar = tmp_path / f"x.requests{suffix}"
    sidecar.write_text("quarter,revenue\nq1,100\n")
    _refused(["scan", str(log), "--events", str(events)], str(sidecar))
    assert sidecar.read_text() == "quarter,revenue\nq1,100\n" and not events.exists()
    sidecar.unlink()
    for _ in range(2):  # the second run replaces the first run's counts
        assert run(["scan", str(log), "--events", str(events)]).exit_code == 1
    assert sidecar.read_bytes() != b"quarter,revenue\nq1,100\n"


def test_write_repro_refuses_an_existing_bundle_unless_overwrite(tmp_path: Path) -> None:
    import harmony_doctor as hd
    from harmony_doctor.errors import OutputError

    small = hd.shrink(hd.parse_tokens(Path(SEED).read_text()), budget=2_000)
    out = tmp_path / "bundle"
    written = hd.write_repro(small, out, copy_vocab=False)
    assert hd.existing_repro_files(out, copy_vocab=False) == written
    assert hd.existing_repro_files(out) == written  # no vocab/ copy was made
    before = {p: p.read_bytes() for p in written}
    (out / "tokens.json").write_text("[1]\n")
    with pytest.raises(OutputError, match="already there"):
        hd.write_repro(small, out, copy_vocab=False)
    assert (out / "tokens.json").read_text() == "[1]\n"
    assert hd.write_repro(small, out, copy_vocab=False, overwrite=True) == written
    assert {p: p.read_bytes() for p in written} == before


# --- 4. escaping: GitHub annotations, and CSV cells that read back as written --------------

# Characters that may reorder or break a line in GitHub's log view, or colour it.
UNSAFE = "\x1b\x00\x07\x7f\x85\u202e\u202d\u2066\u2069\u200f\u061c\u2028\u2029\ufeff"
unsafe_text = st.lists(hostile_text | st.sampled_from(sorted(UNSAFE + "\r\n%:,\t")), max_size=20)


def _github_unescape(value: str) -> str:
    """What GitHub's runner does to a property or message (the toolkit's inverse)."""
    for code, ch in (("%0D", "\r"), ("%0A", "\n"), ("%3A", ":"), ("%2C", ","), ("%25", "%")):
        value = value.replace(code, ch)
    return value


def test_visible_shows_what_one_line_shows_and_keeps_line_breaks() -> None:
    from harmony_doctor.output.escape import one_line, visible

    assert visible("a\u202eb\n\tc\x1b[0m\u2028\U000e0001") == (
        "a\\u202eb\n\tc\\x1b[0m\\u2028\\U000e0001"
    )
    assert one_line(visible("x\u2066y")) == one_line("x\u2066y") == "x\\u2066y"


@given(unsafe_text.map("".join))
def test_workflow_command_escaping_goes_through_the_one_escaper(value: str) -> None:
    """GitHub reads back the text as given, with only its unsafe characters shown (as the
    escaper shows them everywhere) and CR/LF as the toolkit escapes them."""
    from harmony_doctor.output.escape import visible
    from harmony_doctor.output.github import escape_data, escape_property

    shown = "\r".join("\n".join(visible(p) for p in part.split("\n")) for part in value.split("\r"))
    for escaped in (escape_data(value), escape_property(value)):
        assert not set(escaped) & set(UNSAFE + "\r\n")
        assert _github_unescape(escaped) == shown
    assert not set(escape_property(value)) & set(":,")


def test_github_annotations_show_bidi_and_control_characters(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.scan.vllm_logs import access, traceback

    step = tmp_path / "step.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))

    logs = tmp_path / "logs"
    logs.mkdir()
    name = "evil\u202egol.txt\u2066.log"  # shows as "evil" + "gol.txt" reversed
    remainder = "to\u202ework\u2028done"  # (the log reader strips colour codes itself)
    lines = [access(4)]
    lines += traceback(
        4, "11-28 12:30:00", f'unexpected tokens remaining in message header: Some("{remainder}")'
    )
    (logs / name).write_text("\n".join(lines) + "\n")
    result = run(["scan", str(logs), "-j", "1", "--format", "github", "--by", "file,code"])
    assert result.exit_code == 1, result.stderr
    markdown = step.read_text()  # the step summary's table cells too
    assert "evil\\u202egol.txt\\u2066.log" in markdown and not set(markdown) & set(UNSAFE)
    error = next(line for line in result.stdout.splitlines() if line.startswith("::error "))
    props, message = error.removeprefix("::error ").split("::", 1)
    # The file property is the real path, which GitHub attaches the annotation by (it shows
    # it as no text); everything GitHub shows is escaped.
    assert _github_unescape(dict(p.split("=", 1) for p in props.split(","))["file"]) == str(
        logs / name
    )
    assert not set(props.replace(f"file={logs / name}", "")) & set(UNSAFE)
    assert "to\\u202ework\\u2028done" in message and not set(message) & set(UNSAFE)


def test_github_annotation_file_is_escaped_only_as_the_command_format_asks(
    tmp_path: Path,
) -> None:
    """A path with `%`, `:`, `,` and a control character reads back, after GitHub's own
    unescaping, as the path itself: the annotation attaches to the file."""
    from tests.scan.vllm_logs import access, traceback

    logs = tmp_path / "logs"
    logs.mkdir()
    name = "a,b:100%\tc\x1bd.log"
    lines = [access(4), *traceback(4, "11-28 12:30:00", "Unknown role: x")]
    (logs / name).write_text("\n".join(lines) + "\n")
    result = run(["scan", str(logs), "-j", "1", "--format", "github"])
    error = next(line for line in result.stdout.splitlines() if line.startswith("::error "))
    props = error.removeprefix("::error ").split("::", 1)[0]
    assert _github_unescape(dict(p.split("=", 1) for p in props.split(","))["file"]) == str(
        logs / name
    )


def test_csv_cells_read_back_as_written() -> None:
    from harmony_doctor.output.tables import safe_cell

    assert safe_cell("'=x") == "''=x" and safe_cell("=x") == "'=x" and safe_cell("'x") == "''x"
    assert safe_cell("x'") == "x'" and safe_cell(-1) == -1


cell_text = st.tuples(
    st.sampled_from(["", "'", "''", "=", "'=", "-", "'-", "+", "@", "\t", "x"]),
    st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\r\n\x00")),
).map("".join)


@given(st.lists(cell_text.filter(bool), min_size=1, max_size=8))
def test_a_csv_table_reads_back_cell_for_cell(cells: list[str]) -> None:
    """Every cell reads back as written, but control and bidi characters, which a CSV file
    shows as escapes as the terminal does (Parquet and JSONL keep them)."""
    import tempfile

    import polars as pl

    from harmony_doctor.output.escape import visible
    from harmony_doctor.output.tables import write_table
    from harmony_doctor.scan.event_files import read_table

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder, "t.csv")
        write_table(pl.DataFrame({"file": cells}), path)
        assert read_table(path)["file"].to_list() == [visible(c) for c in cells]


def test_report_of_the_csv_groups_as_report_of_the_jsonl(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`=x.log` is written `'=x.log`, and a real `'=x.log` `''=x.log`: two files, two rows."""
    import json

    monkeypatch.chdir(tmp_path)  # the files named as they are, not under a folder's path
    names = ["=x.log", "'=x.log", "'x.log", "''x.log", "-x.log", "x.log"]
    for name in names:
        Path(name).write_bytes(LOG)
    groups = {}
    for suffix in (".csv", ".jsonl"):
        scanned = run(["scan", "-j", "1", "--events", f"events{suffix}", "--", *names])
        assert scanned.exit_code == 1, scanned.stderr
        reported = run(["report", f"events{suffix}", "--by", "file", "-f", "json"])
        assert reported.exit_code == 1, reported.stderr
        doc = json.loads(reported.stdout)
        groups[suffix] = {g["file"]: (g["count"], g["requests"]) for g in doc["groups"]}
    assert groups[".csv"] == groups[".jsonl"]
    assert sorted(groups[".csv"]) == sorted(names)


# --- 5. messages that say what happened -----------------------------------------------------


def test_report_of_a_missing_file_says_no_such_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = run(["report", "nope.csv"])
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr == "harmony-doctor: error: nope.csv: No such file or directory\n"


def _events(tmp_path: Path, name: str) -> Path:
    log, events = tmp_path / "app.log", tmp_path / name
    log.write_bytes(LOG)
    assert run(["scan", str(log), "-j", "1", "--events", str(events)]).exit_code == 1
    return events


@pytest.mark.parametrize("name", ["ev.parquet", "ev.csv"])
def test_an_unreadable_events_file_says_permission_denied(tmp_path: Path, name: str) -> None:
    events = _events(tmp_path, name)
    events.chmod(0o000)
    try:
        if os.access(events, os.R_OK):
            pytest.skip("running as a user who may read anything (the next test fakes it)")
        result = run(["report", str(events)])
    finally:
        events.chmod(0o644)
    assert result.exit_code == 2
    assert result.stderr == f"harmony-doctor: error: cannot read {events}: Permission denied\n"


@pytest.mark.parametrize("name", ["ev.parquet", "ev.csv"])
def test_a_file_that_cannot_be_opened_is_not_called_corrupt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """As the test above, for a user whom permissions do not stop (root): opening is refused."""
    import errno

    events = _events(tmp_path, name)
    real_open = os.open

    def refused(path: object, *args: object, **kwargs: object) -> int:
        if Path(str(path)) == events:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
        return real_open(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", refused)
    result = run(["report", str(events)])
    assert result.exit_code == 2
    assert result.stderr == f"harmony-doctor: error: cannot read {events}: Permission denied\n"


@pytest.mark.parametrize("name", ["p.pdf", "p.html.txt", "p"])
def test_html_must_be_named_as_a_page(tmp_path: Path, name: str) -> None:
    log = tmp_path / "app.log"
    log.write_bytes(LOG)
    page = tmp_path / name
    _refused(["scan", str(log), "--html", str(page)], str(page), ".html or .htm")
    _refused(["report", str(log), "--html", str(page)], str(page), ".html or .htm")
    assert not page.exists()


@pytest.mark.parametrize("name", ["p.html", "p.htm", "P.HTML"])
def test_html_named_as_a_page_is_written(tmp_path: Path, name: str) -> None:
    log = tmp_path / "app.log"
    log.write_bytes(LOG)
    page = tmp_path / name
    assert run(["scan", str(log), "-j", "1", "--html", str(page)]).exit_code == 1
    assert page.read_text().lstrip().lower().startswith("<!doctype html")


# --- no silent cuts --------------------------------------------------------------------------

# A one-line input well past the point where lines were once cut (4 MiB kept of a line longer
# than about 8.4 MB): ids, then spaces, then a header the stream ends inside (HD141).
PADDING = 9 * 1024 * 1024
FAULT_AT_THE_END = "200005 17196 200008 12194 200002 " + " " * PADDING + "200006 200006"


@pytest.mark.parametrize(("command", "code"), [("explain", 1), ("recover", 1), ("decode", 0)])
def test_a_long_one_line_input_is_read_to_its_end(tmp_path: Path, command: str, code: int) -> None:
    path = tmp_path / "long.ids"
    path.write_text(FAULT_AT_THE_END)
    result = run([command, str(path), "--format", "json"])
    assert result.exit_code == code, result.stderr
    assert json.loads(result.stdout)["input"]["tokens"] == 7  # the two after the padding too
    if command == "explain":
        assert "HD141" in result.stdout


def test_explain_of_a_long_json_array_is_not_taken_for_a_cut_log(tmp_path: Path) -> None:
    path = tmp_path / "long.json"
    path.write_text(FAULT_AT_THE_END.replace(" 2", ", 2").join("[]"))
    result = run(["explain", str(path)])
    assert result.exit_code == 1, result.stderr
    assert "HD141" in result.stdout and "cut" not in result.stdout.split("why")[0]


def test_an_input_past_the_limit_exits_2_naming_the_limit() -> None:
    result = run(["decode", "/dev/zero"])  # endless, and one line: read to the limit, no further
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr == (
        "harmony-doctor: error: /dev/zero is larger than 32 MiB, the most one input is read "
        "for this command (scan reads logs of any size)\n"
    )


ERROR_LINE = (
    "ERROR 2026-11-30 10:00:00 openai_harmony.HarmonyError: unexpected tokens remaining in "
    'message header: Some("<|constrain|>json")'
)


def test_scan_counts_and_reports_lines_longer_than_the_cap(tmp_path: Path) -> None:
    from harmony_doctor.inputs.files import MAX_LINE

    path = tmp_path / "long.log"
    long = f"{ERROR_LINE} {'y' * MAX_LINE} {ERROR_LINE}\n"  # the second failure is past the cap
    path.write_text(long + "INFO fine\n" + long)
    found = json.loads(run(["scan", str(path), "--format", "json"]).stdout)["files"]
    # a cut line was not read whole: partial (issue 34), the run exits 2
    assert [(f["status"], f["cut_lines"], f["lines"]) for f in found] == [("partial", 2, 3)]
    assert found[0]["reason"] == "2 lines longer than 4 MiB read to 4 MiB only"
    text = run(["scan", str(path)]).stdout
    assert "2 lines longer than 4 MiB read to 4 MiB only" in text


def test_scan_of_lines_within_the_cap_reports_no_cut(tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    path.write_bytes(LOG)
    found = json.loads(run(["scan", str(path), "--format", "json"]).stdout)["files"]
    assert [(f["status"], f["cut_lines"], f["reason"]) for f in found] == [("ok", 0, None)]


@pytest.mark.parametrize(
    ("change", "how"),
    [
        ("append", "grew"),
        ("truncate", "shrank"),
        ("rewrite", "was written to"),
        ("replace", "replaced"),
    ],
)
def test_a_file_that_changes_while_scanned_is_partial(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str, how: str
) -> None:
    from harmony_doctor.scan import run as scanning
    from harmony_doctor.scan.source import scan_source as real

    path = tmp_path / "app.log"
    path.write_bytes(LOG)

    def changing(*args: Any, **kwargs: Any) -> Any:
        found = real(*args, **kwargs)  # read to its end, then the file changes under it
        if change == "append":
            with path.open("ab") as stream:
                stream.write(LOG)
        elif change == "truncate":
            os.truncate(path, len(LOG) // 2)
        elif change == "rewrite":
            stat = path.stat()
            path.write_bytes(LOG.upper())
            os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
        else:
            path.unlink()
            path.write_bytes(LOG)
        return found

    monkeypatch.setattr(scanning, "scan_source", changing)
    result = run(["scan", str(path), "-j", "1", "--format", "json"])
    (found,) = json.loads(result.stdout)["files"]
    if change == "append":  # a live log read to a line, as one version of itself: said, ok
        assert result.exit_code == 1  # its failures, and nothing else
        assert found["status"] == "ok" and "grew while it was read" in found["reason"], found
        assert "read to line 8, the rest is newer" in found["reason"]
        return
    assert result.exit_code == 2
    assert found["status"] == "partial" and how in found["reason"], found
    assert f"partial {path}: " in result.stderr


def test_a_file_left_alone_is_ok(tmp_path: Path) -> None:
    import harmony_doctor as hd

    path = tmp_path / "app.log"
    path.write_bytes(LOG)
    report = hd.scan_file(path).report
    assert (report.status, report.reason) == ("ok", None)
