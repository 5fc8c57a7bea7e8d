"""Exact counting (issue 11 section 2): one failure one count, requests per (file, pid, hour),
each file read once, scan's own exports not read as logs, no rate above 100%."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections import Counter
from datetime import datetime
from pathlib import Path

import pytest

import harmony_doctor
from harmony_doctor.inputs.files import discover
from harmony_doctor.logs import extract_text
from harmony_doctor.scan import run as scanning
from harmony_doctor.scan.records import ScanOptions
from tests.helpers import SAMPLES, run
from tests.inputs import wrapping

REFERENCE = datetime(2026, 11, 28, 23, 59, 0)


def _log_events(data: bytes) -> list[tuple[int, str]]:
    result = harmony_doctor.scan_stream(
        io.BytesIO(data), "x.log", ScanOptions(replay=False), reference=REFERENCE
    )
    return [(e.line, e.code) for e in result.events if e.source == "log"]


def _chained_variants() -> dict[str, list[str]]:
    lines = (SAMPLES / "sglang-exception-group.log").read_text().splitlines()
    long = " " + "x" * 5000  # frames far longer than the scan's context windows
    return {
        "plain": lines,
        "long-lines": [line + long if line.startswith("  ") else line for line in lines],
        "timestamps": [f"2025-10-02 09:14:05 {line}" for line in lines],
        "blank-lines": [x for line in lines for x in (line, "")],
    }


@pytest.mark.parametrize("variant", list(_chained_variants()))
@pytest.mark.parametrize("wrapper", ["none", "docker", "cri", "journal-json"])
def test_chained_reraise_is_counted_once_whatever_surrounds_it(variant: str, wrapper: str) -> None:
    lines = _chained_variants()[variant]
    text = "\n".join(lines) + "\n"
    explained = extract_text(text)
    data = text.encode() if wrapper == "none" else wrapping.WRAPPERS[wrapper](lines)
    scanned = _log_events(data)
    assert len(scanned) == len(explained) == 1, scanned
    assert scanned[0][1] == explained[0].code


def test_chained_reraise_with_lines_stamped_seconds_apart_is_counted_once() -> None:
    lines = (SAMPLES / "sglang-exception-group.log").read_text().splitlines()
    stamped = [f"2025-10-02 09:14:{n % 60:02d} {line}" for n, line in enumerate(lines)]
    text = "\n".join(stamped) + "\n"
    assert len(_log_events(text.encode())) == 1
    assert len(extract_text(text)) == 1  # explain agrees


# --- requests per (file, pid, hour) -----------------------------------------------------------


def _request_log(seed: int, hours: int) -> tuple[str, Counter[tuple[int, str]]]:
    """A vLLM log crossing `hours` hours: stamped lines, then access lines without a stamp of
    their own (uvicorn's), each in the hour of the last stamp before it; and its truth."""
    truth: Counter[tuple[int, str]] = Counter()
    lines = []
    for hour in range(hours):
        day, hh = 27 + hour // 24, hour % 24
        for minute in range(0, 60, 7):
            pid = 11 + (minute + seed) % 3
            stamp = f"11-{day:02d} {hh:02d}:{minute:02d}:{(minute * seed) % 60:02d}"
            lines.append(f"(APIServer pid={pid}) INFO {stamp} [loggers.py:123] {'.' * 3000}")
            for k in range((minute + hour + seed) % 5):
                lines.append(
                    f'(APIServer pid={pid}) INFO:     10.0.0.{k}:4{k} - "POST /v1/chat/completions '
                    'HTTP/1.1" 200 OK'
                )
                truth[(pid, f"2026-11-{day:02d}T{hh:02d}")] += 1
    return "\n".join(lines) + "\n", truth


@pytest.mark.parametrize("jobs", [1, 2, 3])
def test_requests_per_pid_and_hour_are_exact_for_every_jobs_value(
    tmp_path: Path, jobs: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(scanning, "POOL_BYTES", 0)  # really share the files out
    truth: dict[str, Counter[tuple[int, str]]] = {}
    for seed in range(3):
        text, truth[f"{seed}.log"] = _request_log(seed, 40)
        path = tmp_path / f"{seed}.log"
        path.write_text(text)
        stamp = REFERENCE.timestamp()
        os.utime(path, (stamp, stamp))
    sources, _ = discover([str(tmp_path)])
    result = scanning.scan(sources, ScanOptions(jobs=jobs), now=REFERENCE)
    got: dict[str, Counter[tuple[int, str]]] = {name: Counter() for name in truth}
    for tally in result.requests:
        assert tally.pid is not None and tally.hour is not None
        got[Path(tally.file).name][(tally.pid, tally.hour)] += tally.count
    assert got == truth


def test_every_group_carries_its_requests_in_json(tmp_path: Path) -> None:
    text, truth = _request_log(1, 3)
    failure = (
        "(APIServer pid=11) ERROR 11-27 01:30:00 [serving_chat.py:1] openai_harmony.HarmonyError:"
        " Unexpected token 200002 while expecting start token 200006"
    )
    (tmp_path / "x.log").write_text(text + failure + "\n")
    out = run(["scan", "--format", "json", "--by", "pid,hour", "--jobs", "1", str(tmp_path)])
    (group,) = json.loads(out.stdout)["groups"]
    assert group["requests"] == sum(
        n for (pid, hour), n in truth.items() if pid == 11 and hour.endswith("T01")
    )


# --- each file once; scan's own exports are not logs --------------------------------------------


def test_same_file_named_twice_is_read_once(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "a.log"
    log.parent.mkdir()
    log.write_bytes((SAMPLES / "vllm-traceback.log").read_bytes())
    (tmp_path / "link.log").symlink_to(log)
    once = harmony_doctor.scan_paths([log])
    for paths in ([log, log], [log.parent, log], [log, tmp_path / "link.log"]):
        result = harmony_doctor.scan_paths(paths)
        assert len(result.files) == 1 and len(result.events) == len(once.events) > 0


@pytest.mark.parametrize("name", ["events.csv", "events.jsonl", "events.parquet", "summary.csv"])
def test_files_scan_wrote_are_skipped_with_a_reason(tmp_path: Path, name: str) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "a.log").write_bytes((SAMPLES / "vllm-traceback.log").read_bytes())
    option = "--summary-csv" if name.startswith("summary") else "--events"
    first = run(["scan", "--format", "json", "--jobs", "1", option, str(logs / name), str(logs)])
    again = run(["scan", "--format", "json", "--jobs", "1", str(logs)])
    before, after = json.loads(first.stdout), json.loads(again.stdout)
    assert after["totals"]["failures"] == before["totals"]["failures"] > 0
    assert after["totals"]["lines"] == before["totals"]["lines"]
    (export,) = [f for f in after["files"] if f["path"].endswith(name)]
    assert export["status"] == "ignored" and "written by scan" in export["reason"]
    assert again.exit_code == first.exit_code  # an ignored export is not an unreadable input


def test_rate_is_never_above_100_percent(tmp_path: Path) -> None:
    access = '(APIServer pid=1) INFO 11-27 10:00:00 "POST /v1/chat/completions HTTP/1.1" 200\n'
    failure = (
        "(APIServer pid=1) ERROR 11-27 10:00:0{n} [serving_chat.py:1] openai_harmony.HarmonyError:"
        " Unknown role: assistantassistant{n}\n"
    )
    (tmp_path / "x.log").write_text(access + "".join(failure.format(n=n) for n in range(3)))
    out = json.loads(run(["scan", "--format", "json", "--jobs", "1", str(tmp_path)]).stdout)
    assert out["totals"]["requests"] == 1 and out["totals"]["failures"] == 3
    assert out["totals"]["rate"] is None and out["totals"]["rate_note"] == "requests not logged"
    for group in out["groups"]:
        assert group["rate"] is None or group["rate"] <= 1
    table = run(["scan", "--jobs", "1", str(tmp_path)]).stdout
    assert "rate ? (requests not logged)" in table


def test_version_names_the_scan_core() -> None:
    code = [sys.executable, "-m", "harmony_doctor", "--version"]
    forced = subprocess.run(
        code, capture_output=True, text=True, env={**os.environ, "HARMONY_DOCTOR_NATIVE": "0"}
    )
    assert forced.stdout.strip().endswith("(scan core: python)")
    default = subprocess.run(code, capture_output=True, text=True)
    assert default.stdout.strip().endswith(("(scan core: native)", "(scan core: python)"))
