"""Signals end a run cleanly: no worker, resource tracker or temporary file outlives it.

A real `scan -j 2` over several files large enough for the process pool is started, signalled
once its workers run, and every process it started is looked up in /proc afterwards.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import SAMPLES

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/task").exists(), reason="reads the process tree from /proc"
)

LOG = (SAMPLES / "vllm-requests.log").read_bytes()  # replays: slow enough to be signalled
FILE_BYTES = 6 * 1024 * 1024  # three of them pass scan/run.POOL_BYTES: the pool is used
ENDINGS = {
    signal.SIGINT: (130, "harmony-doctor: interrupted\n"),
    signal.SIGTERM: (143, "harmony-doctor: terminated (SIGTERM)\n"),
    signal.SIGHUP: (129, "harmony-doctor: hung up (SIGHUP)\n"),
}


def _default_signals() -> None:
    """In the child: the three signals at their defaults, as a shell starts a job. A runner
    started under `nohup` (or a service manager) passes SIGHUP on ignored, and the scan rightly
    keeps it ignored: then there is nothing to test."""
    for number in ENDINGS:
        signal.signal(number, signal.SIG_DFL)


def _logs(folder: Path) -> list[str]:
    paths = []
    for n in range(3):
        path = folder / f"app{n}.log"
        path.write_bytes(LOG * (FILE_BYTES // len(LOG) + 1))
        paths.append(str(path))
    return paths


def _children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found.update(int(p) for p in (task / "children").read_text().split())
        except OSError:
            continue
    return found


def _descendants(pid: int) -> set[int]:
    found, todo = set(), [pid]
    while todo:
        for child in _children(todo.pop()):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _start_time(pid: int) -> str | None:
    """The process's start time (field 22 of /proc/PID/stat), None when it is gone or a
    zombie: a pid taken again by another process does not count as the same one."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return None if fields[0] == "Z" else fields[19]


def _scan_with_workers(
    tmp_path: Path, env: dict[str, str] | None = None, logs: list[str] | None = None
) -> tuple[subprocess.Popen[bytes], dict[int, str]]:
    """A `scan -j 2` whose two workers and resource tracker are running, and their start
    times (given `logs`, its JSON on stdout, a pipe)."""
    given = ["-f", "json", *logs] if logs else _logs(tmp_path)
    child = subprocess.Popen(
        [sys.executable, "-m", "harmony_doctor", "scan", "-j", "2", *given],
        stdout=subprocess.PIPE if logs else subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group, as a shell job is
        preexec_fn=_default_signals,
        env=env,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        started = {p: _start_time(p) for p in _descendants(child.pid)}
        if len(started) >= 3:  # the resource tracker and two workers
            time.sleep(0.5)  # the workers are reading
            assert child.poll() is None, "the scan ended before it could be signalled"
            return child, {p: t for p, t in started.items() if t is not None}
        time.sleep(0.05)
    child.kill()
    child.communicate()
    pytest.fail("the pool never started")


def _survivors(started: dict[int, str]) -> list[int]:
    deadline = time.monotonic() + 10
    alive = list(started)
    while time.monotonic() < deadline:
        alive = [p for p, t in started.items() if _start_time(p) == t]
        if not alive:
            break
        time.sleep(0.05)
    for pid in alive:  # leave nothing behind, whatever the test says
        os.kill(pid, signal.SIGKILL)
    return alive


@pytest.mark.parametrize("number", list(ENDINGS))
@pytest.mark.parametrize("group", [False, True], ids=["process", "group"])
def test_a_signal_ends_the_scan_its_workers_and_tracker(
    tmp_path: Path, number: int, group: bool
) -> None:
    begun = time.monotonic()
    child, started = _scan_with_workers(tmp_path)
    sent = time.monotonic()
    if group:  # a terminal's Ctrl-C, or a service manager stopping the whole group
        os.killpg(child.pid, number)
    else:
        child.send_signal(number)
    _, err = child.communicate(timeout=30)
    took = time.monotonic() - sent
    code, line = ENDINGS[signal.Signals(number)]
    assert (child.returncode, err.decode()) == (code, line)  # no leaked-semaphore warning
    # About 0.1 s; the pool once waited for its files. The bound is the run's own pace (how
    # long its start took, on this machine at this load), not a fixed number of seconds.
    assert took < max(5.0, 2 * (sent - begun)), f"took {took:.1f} s to stop"
    assert _survivors(started) == []


def test_workers_end_with_a_killed_parent(tmp_path: Path) -> None:
    """SIGKILL cannot be answered: the workers end by the parent-death signal, then the
    resource tracker, whose pipe they held."""
    child, started = _scan_with_workers(tmp_path)
    child.kill()
    child.communicate(timeout=30)  # its stderr closes when the last process holding it ends
    assert child.returncode == -signal.SIGKILL
    assert _survivors(started) == []


_PROMETHEUS = """
import os, sys, time
from pathlib import Path
from prometheus_client import CollectorRegistry, Gauge
from harmony_doctor.cli import signals
from harmony_doctor.output import operator_files

def slow_rename(*args, **kwargs):  # the signal lands while the temporary file is there
    print("writing", flush=True)
    time.sleep(30)

os.replace = slow_rename
registry = CollectorRegistry()
Gauge("harmony_doctor_files", "Inputs read.", registry=registry).set(1)
signals.install()
operator_files.write_textfile(Path(sys.argv[1]), registry)
"""


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_signal_during_the_prometheus_write_leaves_no_temporary_file(
    tmp_path: Path, number: int
) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", _PROMETHEUS, str(tmp_path / "m.prom")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=_default_signals,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline() == b"writing\n"
        assert [p.name for p in tmp_path.iterdir()] != []  # the temporary file, written
        child.send_signal(number)
        child.communicate(timeout=30)
    finally:
        child.kill()
        child.communicate()
    assert child.returncode != 0
    assert list(tmp_path.iterdir()) == []


def test_an_ignored_hangup_stays_ignored() -> None:
    """Under nohup, SIGHUP is ignored before the program starts: it is not taken back."""
    code = (
        "import signal, os\n"
        "from harmony_doctor.cli import signals\n"
        "signals.install()\n"
        "os.kill(os.getpid(), signal.SIGHUP)\n"
        "print('still here')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        check=False,
        preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN),
    )
    assert (result.returncode, result.stdout) == (0, b"still here\n")


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    return _logs(tmp_path_factory.mktemp("logs"))


@settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(number=st.sampled_from(list(ENDINGS)), delay=st.floats(0.0, 2.5))
def test_a_signal_at_any_moment_leaves_outputs_whole_or_absent(
    tmp_path_factory: pytest.TempPathFactory, logs: list[str], number: int, delay: float
) -> None:
    """Whenever the signal lands (start-up, the pool, the writes), the outputs are either
    complete or absent, with no temporary file beside them, and no process outlives the run."""
    out = tmp_path_factory.mktemp("out")
    events, prom = out / "events.jsonl", out / "m.prom"
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "harmony_doctor",
            "scan",
            "-j",
            "2",
            *logs,
            "--events",
            str(events),
            "--prometheus",
            str(prom),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=_default_signals,
    )
    started: dict[int, str] = {}
    deadline = time.monotonic() + delay
    while time.monotonic() < deadline and child.poll() is None:
        started |= {p: t for p in _descendants(child.pid) if (t := _start_time(p)) is not None}
        time.sleep(0.02)
    if child.poll() is None:
        child.send_signal(number)
    _, err = child.communicate(timeout=60)
    assert _survivors(started) == []
    code, line = ENDINGS[signal.Signals(number)]
    names = sorted(p.name for p in out.iterdir())
    assert set(names) <= {"events.jsonl", "m.prom"}, names  # no temporary file left
    if events.exists():  # whole: every row parses
        assert [json.loads(row) for row in events.read_text().splitlines()]
    if prom.exists():
        assert "harmony_doctor_scan_timestamp_seconds" in prom.read_text()
    text = err.decode()
    if _in_interpreter_start(child.returncode, number, text):
        assert names == [] and not started
    elif child.returncode == code or (child.returncode == -signal.SIGINT and text == line):
        # Python ends by SIGINT itself once a KeyboardInterrupt went through code run by
        # PyRun (as extension modules load theirs), even when the run caught it: the line
        # was said, and a shell reports 130 either way.
        assert text == line
    else:  # the run ended before the signal
        assert child.returncode == 1, err
        assert names == ["events.jsonl", "m.prom"]


def _in_interpreter_start(returncode: int, number: int, err: str) -> bool:
    """Whether the signal ended the interpreter before any code of ours ran: at its default
    (before Python installs its SIGINT handler), or as a KeyboardInterrupt in its own start-up
    (site, runpy), whose traceback names no module of ours."""
    if returncode == -number and not err:
        return True
    ours = "harmony_doctor/" in err or "harmony_doctor\\" in err
    return returncode in (1, -signal.SIGINT) and err.endswith("KeyboardInterrupt\n") and not ours


def test_an_interrupt_typer_swallows_is_still_said(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A signal landing outside a command's body (typer's parsing, the context's close) is
    turned by typer into a silent exit 130: it is said, with its own code."""
    import typer

    from harmony_doctor.cli import app as cli_app
    from harmony_doctor.cli import funnel, signals

    bare = typer.Typer()

    @bare.command()
    def boom() -> None:
        signals._raise(signal.SIGTERM, None)  # the handler, outside any command wrapper

    monkeypatch.setattr(cli_app, "app", bare)
    monkeypatch.setattr(signals, "_received", [])
    monkeypatch.setattr(funnel, "_said", [])
    with signals.answered():
        code = cli_app._dispatch([])
    assert code == 143
    assert capsys.readouterr().err == "harmony-doctor: terminated (SIGTERM)\n"


_LOADING = """
import os, signal, sys, time, types
from harmony_doctor.cli import start
app = types.ModuleType("harmony_doctor.cli.app")
def loading(name):  # the command line still loading when the signal lands
    os.kill(os.getpid(), {number})
    time.sleep(5)
    raise SystemExit("the signal was not answered")
app.__getattr__ = loading
sys.modules["harmony_doctor.cli.app"] = app
start.main()
"""


def _scripted(script: str, number: int) -> subprocess.CompletedProcess[str]:
    """`script` (which lands signal `number` somewhere in a run of `start.main`) in a child."""
    return subprocess.run(
        [sys.executable, "-c", script.format(number=int(number))],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=_default_signals,
    )


@pytest.mark.parametrize("number", list(ENDINGS))
def test_a_signal_while_the_command_line_loads_ends_with_its_line(number: int) -> None:
    child = _scripted(_LOADING, number)
    code, line = ENDINGS[signal.Signals(number)]
    assert (child.returncode, child.stderr) == (code, line)


_ANSWERED = """
import os, signal, sys, time
from harmony_doctor.cli import app, start
run = app.main
def answered_then_signalled(argv=None):
    try:
        run(["--version"])  # answers, flushes, restores its handlers, exits
    finally:  # the signal lands as the process is on its way out
        os.kill(os.getpid(), {number})
        time.sleep(5)
        print("the signal was not answered", file=sys.stderr)
app.main = answered_then_signalled
start.main()
"""


@pytest.mark.parametrize("number", list(ENDINGS))
def test_a_signal_after_the_run_answered_ends_with_its_line(number: int) -> None:
    """Once the run has written its outputs and put its handlers back, a signal still gets its
    line and its code, not the default action's silent death."""
    child = _scripted(_ANSWERED, number)
    code, line = ENDINGS[signal.Signals(number)]
    assert (child.returncode, child.stderr) == (code, line)
    assert child.stdout.startswith("harmony-doctor ")  # the run's own answer, whole


_MID_LAUNCH = """
import os, signal, sys
from multiprocessing import util
from harmony_doctor.cli import start
spawn = util.spawnv_passfds
def spawned_then_signalled(path, args, passfds):
    pid = spawn(path, args, passfds)  # a worker runs, and waits for its instructions on a pipe
    if any("spawn_main" in os.fsdecode(arg) for arg in args) and not getattr(util, "signalled", False):
        util.signalled = True
        os.kill(os.getpid(), {number})
    return pid
util.spawnv_passfds = spawned_then_signalled
sys.argv = ["harmony-doctor", "scan", "-j", "2", *sys.argv[1:]]
start.main()
"""


@pytest.mark.parametrize("number", list(ENDINGS))
def test_a_signal_while_a_worker_starts_leaves_it_no_traceback(tmp_path: Path, number: int) -> None:
    """Taken in the middle of starting a worker, the signal left it without its instructions:
    it said so with a traceback on the shared stderr, outside the pool's reach."""
    child = subprocess.Popen(
        [sys.executable, "-c", _MID_LAUNCH.format(number=int(number)), *_logs(tmp_path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=_default_signals,
    )
    _, err = child.communicate(timeout=60)
    started = {p: t for p in _descendants(child.pid) if (t := _start_time(p)) is not None}
    code, line = ENDINGS[signal.Signals(number)]
    assert (child.returncode, err.decode()) == (code, line)
    assert _survivors(started) == []


def _workers(pid: int) -> list[int]:
    """The scan's pool workers (not its resource tracker), by their command line."""
    found = []
    try:
        children = _descendants(pid)
    except OSError:  # the scan ended as it was read
        return []
    for child in children:
        try:
            line = Path(f"/proc/{child}/cmdline").read_bytes()
        except OSError:
            continue
        if b"spawn_main" in line:
            found.append(child)
    return found


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_burst_of_signals_to_the_group_still_cleans_up(tmp_path: Path, number: int) -> None:
    """The rule: once a signal has begun the run's end, repeats are ignored until it is done.
    `timeout` and systemd send SIGTERM to the whole group, often more than once; a repeat acted
    on halfway through the cleanup left workers, the spill and a leaked-semaphore warning."""
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    env = {**os.environ, "TMPDIR": str(temporary)}
    child, started = _scan_with_workers(tmp_path, env)
    for _ in range(20):
        os.killpg(child.pid, number)
        time.sleep(0.002)
    _, err = child.communicate(timeout=60)
    code, line = ENDINGS[signal.Signals(number)]
    assert (child.returncode, err.decode()) == (code, line)
    assert _survivors(started) == []
    assert list(temporary.iterdir()) == []


def test_a_worker_killed_under_the_scan_costs_no_input(tmp_path: Path) -> None:
    """The out-of-memory killer ends a worker (SIGKILL): the pool breaks, and the inputs it
    had not finished are read again, one at a time, in workers of their own; the summary is
    the one a scan without the kill prints, without a traceback."""
    logs = _logs(tmp_path)
    clean = subprocess.run(
        [sys.executable, "-m", "harmony_doctor", "scan", "-j", "2", "-f", "json", *logs],
        capture_output=True,
        check=False,
    )
    child, started = _scan_with_workers(tmp_path, logs=logs)
    workers = _workers(child.pid)
    assert workers, "no worker to kill"
    os.kill(workers[0], signal.SIGKILL)
    out, err = child.communicate(timeout=120)
    assert (child.returncode, err.decode()) == (1, "")
    assert out == clean.stdout
    assert _survivors(started) == []


def test_an_input_whose_worker_is_killed_again_is_skipped_with_the_signal_named(
    tmp_path: Path,
) -> None:
    """An input that kills its worker each time it is read (the out-of-memory killer, again
    and again) is skipped with the signal named, one line each, and the scan exits 2: never a
    traceback, nor exit 1 (which reads as failures found, even with --exit-zero)."""
    import threading

    logs = _logs(tmp_path)
    child = subprocess.Popen(
        [sys.executable, "-m", "harmony_doctor", "scan", "-j", "2", "--exit-zero", *logs],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=_default_signals,
    )
    killed: set[int] = set()

    def kill_every_worker() -> None:
        while child.poll() is None:
            for worker in _workers(child.pid):
                if worker not in killed:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(worker, signal.SIGKILL)
                    killed.add(worker)
            time.sleep(0.005)

    killer = threading.Thread(target=kill_every_worker)
    killer.start()
    _, err = child.communicate(timeout=120)
    killer.join()
    lines = err.decode().splitlines()
    assert child.returncode == 2, lines
    assert len(lines) == len(logs), lines
    for line, log in zip(sorted(lines), sorted(logs), strict=True):
        assert line.startswith(f"harmony-doctor: skipped {log}: ")
        assert "killed by SIGKILL" in line
