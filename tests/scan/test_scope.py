"""The rate's scope: a failure counts in a rate only where its requests were counted (same
origin, process, pid and hour, on one clock), on generated logs with ground truth per
(process, hour): the rate of a log equals the rate of the same log split into stdout and
stderr, rotated into parts, wrapped by journald on a clock 5 h ahead, or doubled."""

from __future__ import annotations

import os
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import harmony_doctor as hd
from harmony_doctor.cli.app import app
from harmony_doctor.output.operator import percent
from harmony_doctor.scan.names import process_of
from tests.scan.scoped_logs import (
    GeneratedLog,
    journald,
    llamacpp_log,
    rotated,
    split_streams,
    vllm_log,
)
from tests.scan.vllm_logs import traceback

SEEDS = (1, 2, 3)


def _scan(*paths: Path) -> hd.Summary:
    result = hd.scan(list(paths), hd.ScanOptions(jobs=1, origin="host"))
    return hd.report(result, ["pid", "hour"])


def _cells(summary: hd.Summary) -> dict[tuple[int, str], tuple[int, int | None]]:
    """(pid, hour) -> (failures, requests) of the summary's table."""
    return {
        (int(g["pid"]), g["hour"]): (g["count"], g["requests"]) for g in summary.table.to_dicts()
    }


def _truth(log: GeneratedLog) -> dict[tuple[int, str], tuple[int, int | None]]:
    return {key: (n, log.requests[key]) for key, n in log.failures.items()}


def _rates(summary: hd.Summary) -> tuple[Any, ...]:
    t = summary.totals
    return t["requests"], t["failures"], t["unrated"], t["rate"]


@pytest.fixture(params=SEEDS)
def log(request: pytest.FixtureRequest) -> GeneratedLog:
    return vllm_log(request.param)


def test_a_log_has_its_true_rate_per_process_and_hour(log: GeneratedLog, tmp_path: Path) -> None:
    (tmp_path / "vllm.log").write_text(log.text)
    summary = _scan(tmp_path / "vllm.log")
    assert _cells(summary) == _truth(log)
    assert _rates(summary) == (
        sum(log.requests.values()),
        sum(log.failures.values()),
        0,
        pytest.approx(log.rate),
    )


def _log_timestamps(log: GeneratedLog) -> str:
    """llama-server run with --log-timestamps --log-prefix: each line after the time since the
    start (`0.18.729.178 I `), no clock the scan reads."""
    return "".join(
        f"0.{n // 1000 % 60:02d}.{n % 1000:03d}.{n * 7 % 1000:03d} I {line}\n"
        for n, line in enumerate(log.lines)
    )


@pytest.mark.parametrize("form", ["plain", "log-timestamps", "journald"])
def test_a_llamacpp_log_has_its_true_rate(form: str, tmp_path: Path) -> None:
    """llama-server's request lines are its requests: every failure is rated against those of
    its process (without pid or time of their own: one scope; under journald: the journal's
    pid and hours), and nothing else counts as a request."""
    log = llamacpp_log(4)
    text = {
        "plain": log.text,
        "log-timestamps": _log_timestamps(log),
        "journald": journald(log),
    }[form]
    (tmp_path / "llama-server.log").write_text(text)
    summary = _scan(tmp_path / "llama-server.log")
    requests, failures = sum(log.requests.values()), sum(log.failures.values())
    assert 0 < failures < requests
    assert _rates(summary) == (requests, failures, 0, pytest.approx(failures / requests))
    if form == "journald":  # per (pid, hour) too, the journal's hours 5 h ahead
        ahead = {(4000, f"{int(h[-2:]) + 5:02d}"): n for (_, h), n in log.failures.items()}
        cells = {(pid, hour[-2:]): n for (pid, hour), (n, _) in _cells(summary).items()}
        assert cells == ahead
        requests_by_hour = {(p, h[-2:]): r for (p, h), (_, r) in _cells(summary).items()}
        truth = {(4000, f"{int(h[-2:]) + 5:02d}"): n for (_, h), n in log.requests.items()}
        assert requests_by_hour == {k: truth[k] for k in requests_by_hour}


def test_stdout_and_stderr_parts_give_the_rate_of_the_log(
    log: GeneratedLog, tmp_path: Path
) -> None:
    (tmp_path / "vllm.log").write_text(log.text)
    out, err = split_streams(log)
    (tmp_path / "split").mkdir()
    (tmp_path / "split" / "vllm.stdout.log").write_text(out)
    (tmp_path / "split" / "vllm.stderr.log").write_text(err)
    whole, parts = _scan(tmp_path / "vllm.log"), _scan(tmp_path / "split")
    assert _rates(parts) == _rates(whole) and _cells(parts) == _truth(log)


def test_rotated_parts_give_the_rate_of_the_log(log: GeneratedLog, tmp_path: Path) -> None:
    (tmp_path / "vllm.log").write_text(log.text)
    (tmp_path / "parts").mkdir()
    for index, part in enumerate(reversed(rotated(log, 4, seed=len(log.lines)))):
        (tmp_path / "parts" / ("vllm.log" + (f".{index}" if index else ""))).write_text(part)
    whole, parts = _scan(tmp_path / "vllm.log"), _scan(tmp_path / "parts")
    assert _rates(parts) == _rates(whole) and _cells(parts) == _truth(log)


def test_a_part_with_more_received_than_access_lines_does_not_switch_counting(
    tmp_path: Path,
) -> None:
    log = vllm_log(4)
    received = [i for i, line in enumerate(log.lines) if "Received request" in line]
    cut = received[len(received) // 2] + 1  # after a `Received` line, before its access line
    (tmp_path / "vllm.log.1").write_text("".join(x + "\n" for x in log.lines[:cut]))
    (tmp_path / "vllm.log").write_text("".join(x + "\n" for x in log.lines[cut:]))
    summary = _scan(tmp_path)
    assert summary.totals["requests"] == sum(log.requests.values())  # not one more
    assert _cells(summary) == _truth(log)


def test_journald_on_a_second_clock_gives_the_rate_of_the_log(
    log: GeneratedLog, tmp_path: Path
) -> None:
    (tmp_path / "vllm.log").write_text(log.text)
    (tmp_path / "vllm.json").write_text(journald(log))
    whole, wrapped = _scan(tmp_path / "vllm.log"), _scan(tmp_path / "vllm.json")
    assert _rates(wrapped) == _rates(whole) and _cells(wrapped) == _truth(log)
    assert wrapped.totals["clock"].startswith("each log's own stamps")


def test_a_doubled_log_doubles_every_count_and_keeps_the_rate(
    log: GeneratedLog, tmp_path: Path
) -> None:
    (tmp_path / "vllm.log").write_text(log.text)
    (tmp_path / "twice.log").write_text(log.text + log.text)
    once, twice = _scan(tmp_path / "vllm.log"), _scan(tmp_path / "twice.log")
    assert twice.totals["requests"] == 2 * once.totals["requests"]
    assert twice.totals["failures"] == 2 * once.totals["failures"]
    assert twice.totals["rate"] == pytest.approx(once.totals["rate"])
    assert _cells(twice) == {k: (2 * f, 2 * (r or 0)) for k, (f, r) in _cells(once).items()}


def test_failures_outside_any_scope_are_unrated_not_in_the_rate(tmp_path: Path) -> None:
    log = vllm_log(5)
    (tmp_path / "vllm.log").write_text(log.text)
    lonely = traceback(9, "11-27 10:30:00", "Unknown role: assistantassistant") * 3
    (tmp_path / "worker.log").write_text("\n".join(lonely) + "\n")
    summary = _scan(tmp_path)
    assert summary.totals["rate"] == pytest.approx(log.rate)
    assert summary.totals["unrated"] == 3
    assert summary.totals["failures"] == sum(log.failures.values()) + 3
    by_origin = hd.summarize_scan(
        hd.scan_paths([tmp_path], hd.ScanOptions(jobs=1, origin="host")), ["origin"]
    ).table.to_dicts()
    assert by_origin[0]["unrated"] == 3 and by_origin[0]["rate"] == pytest.approx(log.rate)


def test_a_scope_with_more_failures_than_requests_gives_no_rate(tmp_path: Path) -> None:
    log = vllm_log(6)
    (tmp_path / "vllm.log").write_text(log.text)
    access = '(APIServer pid=7) INFO 11-27 10:00:00 "POST /v1/chat/completions HTTP/1.1" 200'
    flood = [access, *traceback(7, "11-27 10:00:01", "Unknown role: x") * 2]
    (tmp_path / "other.log").write_text("\n".join(flood) + "\n")
    summary = _scan(tmp_path)
    assert summary.totals["rate"] == pytest.approx(log.rate)  # the other scope is left out
    assert summary.totals["unrated"] == 2 and summary.totals["rate_note"]
    assert summary.totals["requests"] == sum(log.requests.values()) + 1


def _run(args: list[str]) -> Any:
    return CliRunner().invoke(app, args, env={"NO_COLOR": "1", "COLUMNS": "200"})


def test_max_rate_fails_on_unrated_failures_unless_told(tmp_path: Path) -> None:
    log = vllm_log(5)
    (tmp_path / "vllm.log").write_text(log.text)
    (tmp_path / "worker.log").write_text(
        "\n".join(traceback(9, "11-27 10:30:00", "Unknown role: x")) + "\n"
    )
    gate = ["scan", "-j", "1", str(tmp_path), "--max-rate", "0.99"]
    failed = _run(gate)
    assert failed.exit_code == 1
    assert (
        "1 failure unrated (in no rate): their process logged no requests in their hour"
        in failed.stdout
    )
    assert "--max-rate fails: 1 failure unrated (in no rate)" in failed.stderr
    assert _run([*gate, "--unrated", "pass"]).exit_code == 0
    above = _run([*gate[:-1], "0.01", "--unrated", "pass"])
    assert above.exit_code == 1 and "is above 1%" in above.stderr  # as given


def test_a_split_log_does_not_pass_a_gate_the_whole_log_fails(tmp_path: Path) -> None:
    log = vllm_log(1)
    out, err = split_streams(log)
    (tmp_path / "vllm.stdout.log").write_text(out)
    (tmp_path / "vllm.stderr.log").write_text(err)
    assert _run(["scan", "-j", "1", str(tmp_path), "--max-rate", "0.01"]).exit_code == 1


def test_samples_rate_counts_only_scoped_failures() -> None:
    samples = Path(__file__).parents[2] / "samples"
    summary = hd.summarize_scan(hd.scan_paths([samples], hd.ScanOptions(jobs=1)))
    totals = summary.totals
    assert totals["rate"] is not None and 0 < totals["rate"] < 1
    assert totals["unrated"] > 0
    rated = totals["failures"] - totals["unrated"]
    # the rate's own denominator: other-engines.log's lines without a pid (LM Studio's failure
    # and llama-server's, with llama-server's 2 requests) are one scope with more failures
    # than requests, which gives no rate
    assert totals["rate"] == pytest.approx(rated / totals["rate_requests"])
    assert totals["rate_requests"] < totals["requests"] and totals["rate_note"]
    for group in summary.table.to_dicts():
        assert group["rate"] is None or 0 < group["rate"] <= 1


@pytest.mark.parametrize(
    ("name", "process"),
    [
        ("logs/vllm.log", "logs/vllm.log"),
        ("logs/vllm.log.1", "logs/vllm.log"),
        ("logs/vllm.log.2.gz", "logs/vllm.log"),
        ("logs/vllm.log-20261127.gz", "logs/vllm.log"),
        ("logs/vllm.stdout.log", "logs/vllm.log"),
        ("logs/vllm.stderr.log", "logs/vllm.log"),
        ("logs/vllm-err.log", "logs/vllm.log"),
        ("logs/vllm.out", "logs/vllm"),
        ("logs/vllm.err", "logs/vllm"),
        ("pod/stdout.log", "pod/.log"),
        ("pod/stderr.log", "pod/.log"),
        ("a/0.log", "a/0.log"),
        ("other/vllm.log", "other/vllm.log"),
        ("output.log", "output.log"),
    ],
)
def test_process_of_joins_rotated_parts_and_stream_splits(name: str, process: str) -> None:
    assert process_of(name) == process


def test_a_rate_never_reads_zero_above_zero() -> None:
    assert percent(1 / 2_031_616) == "<0.01%" and percent(0.0) == "0.00%"
    assert percent(0.2667) == "26.67%"


def test_tallies_count_every_kind_per_process(tmp_path: Path) -> None:
    log = vllm_log(2)
    (tmp_path / "vllm.log").write_text(log.text)
    result = hd.scan_paths([tmp_path / "vllm.log"], hd.ScanOptions(jobs=1))
    kinds: Counter[str | None] = Counter()
    for t in result.requests:
        kinds[t.kind] += t.count
    assert kinds["access"] == kinds["received"] == sum(log.requests.values())


def test_rotation_rank_orders_parts_oldest_first() -> None:
    from harmony_doctor.scan.names import rotation_rank

    names = ["d/vllm.log", "d/vllm.log.1", "d/vllm.log.2.gz", "d/vllm.log.10"]
    assert sorted(names, key=rotation_rank) == [
        "d/vllm.log.10",
        "d/vllm.log.2.gz",
        "d/vllm.log.1",
        "d/vllm.log",
    ]
    dated = ["x.log", "x.log-20261128.gz", "x.log-20261127"]
    assert sorted(dated, key=rotation_rank) == ["x.log-20261127", "x.log-20261128.gz", "x.log"]


def test_the_table_says_which_clock_its_hours_are_on(tmp_path: Path) -> None:
    (tmp_path / "vllm.json").write_text(journald(vllm_log(1)))
    shown = _run(["scan", "-j", "1", str(tmp_path), "--by", "hour"]).stdout
    assert "hours and days on each log's own stamps" in shown
    assert "hours and days" not in _run(["scan", "-j", "1", str(tmp_path)]).stdout


def test_the_readme_example_of_failures_outside_the_scope() -> None:
    samples = Path(__file__).parents[2] / "samples"
    paths = [str(samples / "vllm-traceback.log"), str(samples / "lmdeploy.log")]
    shown = _run(["scan", "-j", "1", *paths]).stdout.splitlines()
    assert shown[0].endswith("5 failures · 4 requests · rate 75.00% (3 of 4 requests)")
    assert (
        shown[1]
        == "2 failures unrated (in no rate): their process logged no requests in their hour"
    )


def test_the_totals_carry_the_rates_own_denominator(tmp_path: Path) -> None:
    """A process that logged fewer requests than failures in its hour gives no rate: its
    requests are counted, but not in the rate, and the header says what the rate divides."""
    access = (
        '(APIServer pid={pid}) INFO 11-27 10:00:0{n} "POST /v1/chat/completions HTTP/1.1" 200\n'
    )
    failure = (
        "(APIServer pid={pid}) ERROR 11-27 10:00:0{n} [serving_chat.py:1] "
        "openai_harmony.HarmonyError: Unknown role: assistantassistant{n}\n"
    )
    lines = [access.format(pid=1, n=0), *(failure.format(pid=1, n=n) for n in range(3))]
    lines += [*(access.format(pid=2, n=n) for n in range(3)), failure.format(pid=2, n=5)]
    (tmp_path / "x.log").write_text("".join(lines))
    totals = _scan(tmp_path / "x.log").totals
    assert (totals["requests"], totals["rate_requests"], totals["failures"]) == (4, 3, 4)
    assert totals["rate"] == pytest.approx(1 / 3) and totals["unrated"] == 3
    result = CliRunner().invoke(app, ["scan", "--jobs", "1", str(tmp_path / "x.log")])
    assert "4 requests · rate 33.33% (1 of 3 requests)" in result.stdout.splitlines()[0]


@pytest.mark.parametrize("pids", [(7,), (7, 8)])
def test_a_process_that_stamps_its_pid_on_some_lines_only(
    tmp_path: Path, pids: tuple[int, ...]
) -> None:
    """Access lines under vLLM's `(APIServer pid=N)` prefix, the error line without one: one
    process when the log names one pid; with two, the error belongs to neither: it is unrated,
    and the requests' rate has no failure in it."""
    access = (
        '(APIServer pid={pid}) INFO 11-27 10:00:0{n} "POST /v1/chat/completions HTTP/1.1" 200\n'
    )
    lines = [access.format(pid=pid, n=n) for n, pid in enumerate(pids * 2)]
    lines.append(
        "ERROR 11-27 10:00:09 [serving_chat.py:1] openai_harmony.HarmonyError: Unknown role: x\n"
    )
    (tmp_path / "v.log").write_text("".join(lines))
    totals = _scan(tmp_path / "v.log").totals
    if len(pids) == 1:
        assert (totals["rate"], totals["unrated"]) == (pytest.approx(0.5), 0)
    else:
        assert (totals["rate"], totals["unrated"]) == (0, 1)


def test_a_llamacpp_part_without_pid_keeps_its_requests_apart_from_ollamas(tmp_path: Path) -> None:
    """One file, two servers: Ollama's lines under journald (pid 1893), then llama-server's
    with no pid (they carry the last stamp). A tally without a pid is the file's first server's
    (Ollama's) by name only: llama-server's requests must not join the Ollama process (as its
    lone pid would have them) but stay with llama-server's failures."""
    ollama = (
        "Nov 12 10:41:{s:02d} gpu-box ollama[1893]: [GIN] 2025/11/12 - 10:41:{s:02d} | 200 | "
        '1.2s | 127.0.0.1 | POST     "/api/chat"\n'
    )
    lines = [
        "Nov 12 10:41:19 gpu-box ollama[1893]: time=2025-11-12T10:41:19.207+01:00 level=WARN "
        'source=routes.go:1593 msg="error parsing tool call: raw=\'{\\"city\\": \\"Paris\\"'
        "<|call|>commentary', err=invalid character '<' after object key:value pair\"\n",
        *(ollama.format(s=s) for s in (19, 20)),
    ]
    for n in range(4):
        if n % 2:
            lines.append(
                'srv    operator(): got exception: {"code":500,"message":"Failed to parse input '
                f'at pos {40 + n}: <|channel|>commentary<|message|>","type":"server_error"}}\n'
            )
        lines.append(f"srv  log_server_r: request: POST /v1/chat/completions 127.0.0.1 {n}\n")
    (tmp_path / "both.log").write_text("".join(lines))
    result = hd.scan_paths([tmp_path / "both.log"], hd.ScanOptions(jobs=1, origin="host"))
    summary = hd.summarize_scan(result, ["pid"])
    assert _rates(summary) == (6, 3, 0, pytest.approx(3 / 6))
    rows = {g["pid"]: (g["count"], g["requests"]) for g in summary.table.to_dicts()}
    assert rows == {"1893": (1, 2), None: (2, 4)}


@pytest.mark.parametrize("host", ["quorra ", ""])
def test_journald_ollama_lines_are_on_their_own_full_dates(tmp_path: Path, host: str) -> None:
    """Ollama under journald (with its host, or `--no-hostname`): a request line dated by gin
    (`2024/12/11 - 09:58:58`) and a failure 32 s later dated by logfmt share their hour, though
    the journal's yearless time would date them by the file's (2026) modification time."""
    lines = [
        f"Dec 11 09:58:58 {host}ollama[812]: [GIN] 2024/12/11 - 09:58:58 | 500 |        29m59s |"
        '      10.0.0.123 | POST     "/api/chat"\n',
        f"Dec 11 09:59:30 {host}ollama[812]: time=2024-12-11T09:59:30.186Z level=ERROR "
        'source=routes.go:1 msg="error parsing tool call" raw="{\\"a\\":" '
        'err="unexpected end of JSON input"\n',
    ]
    path = tmp_path / "ollama.log"
    path.write_text("".join(lines))
    modified = datetime(2026, 12, 6, 1, 0).timestamp()
    os.utime(path, (modified, modified))
    result = hd.scan([path], hd.ScanOptions(jobs=1, origin="host"))
    assert [(e.timestamp, e.pid) for e in result.events] == [("2024-12-11T09:59:30", 812)]
    summary = hd.report(result, ["pid", "hour"])
    assert _cells(summary) == {(812, "2024-12-11T09"): (1, 1)}
    assert _rates(summary) == (1, 1, 0, pytest.approx(1.0))
