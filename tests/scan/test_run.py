"""scan/run.py and `harmony-doctor scan`: units, ranges, processes, one report per source."""

from __future__ import annotations

import csv
import gzip
import json
from collections import Counter
from pathlib import Path

import pytest

import harmony_doctor as hd
from harmony_doctor.harmony.vocab import Vocab
from harmony_doctor.inputs.files import discover
from harmony_doctor.scan import run as scanning
from harmony_doctor.scan.summary import summarize
from tests.helpers import run
from tests.scan.vllm_logs import P, access, info, scan_folder, traceback


def test_events_requests_and_rates(logs_dir: Path) -> None:
    result = scan_folder(logs_dir)
    assert len(result.files) == 3 and not result.skipped
    assert [e.code for e in result.events] == ["HD111", "HD101", "HD111"]
    first = result.events[0]
    assert first.file.endswith("vllm.log.1") and first.line == 16 and first.pid == 1
    assert first.server == "vllm" and first.harmony_version == ">=0.0.5"
    assert (
        first.token_id == 200002
        and first.timestamp is not None
        and first.timestamp.endswith("11-27T10:00:05")
    )
    assert sum(t.count for t in result.requests if t.kind == "access") == 13
    table = summarize(result, ("code",)).to_dicts()
    assert table[0]["code"] == "HD111" and table[0]["count"] == 2
    assert table[0]["rate"] == pytest.approx(2 / 13)
    assert table[0]["share"] == pytest.approx(2 / 3)


def test_cli_scan_table_json_csv_and_exit_codes(logs_dir: Path) -> None:
    table = run(["scan", str(logs_dir)])
    assert table.exit_code == 1
    assert "HD111" in table.stdout and "3 failures ·" in table.stdout
    assert "vllm.log.gz" in table.stdout  # the per-file table
    doc = json.loads(run(["scan", "--format", "json", "--by", "code,file", str(logs_dir)]).stdout)
    assert doc["schema"] == "harmony-doctor.scan/1" and doc["by"] == ["code", "file"]
    assert doc["totals"]["failures"] == 3 and doc["totals"]["requests"] == 13
    assert doc["totals"]["files"] == 3 and doc["totals"]["bytes"] > 0
    assert {f["status"] for f in doc["files"]} == {"ok"}
    rows = list(csv.DictReader(run(["scan", "--format", "csv", str(logs_dir)]).stdout.splitlines()))
    assert {r["code"] for r in rows} == {"HD111", "HD101"}
    assert run(["scan", "--exit-zero", str(logs_dir)]).exit_code == 0
    assert run(["scan", "--max-failure-rate", "0.5", str(logs_dir)]).exit_code == 0
    assert run(["scan", "--max-failure-rate", "0.1", str(logs_dir)]).exit_code == 1


def test_cli_scan_clean_stdin_exits_0() -> None:
    result = run(["scan", "-"], "INFO all good\n")
    assert result.exit_code == 0 and "No Harmony failures found" in result.stdout


def test_cli_scan_bad_group_is_exit_2(logs_dir: Path) -> None:
    result = run(["scan", "--by", "colour", str(logs_dir)])
    assert result.exit_code == 2 and result.stderr.count("\n") == 1


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".parquet"])
def test_events_export_round_trips(logs_dir: Path, tmp_path: Path, suffix: str) -> None:
    from harmony_doctor.scan.event_files import read_table

    out = tmp_path / f"events{suffix}"
    summary = tmp_path / "summary.csv"
    run(["scan", "--events", str(out), "--summary", str(summary), str(logs_dir)])
    frame = read_table(out)
    assert frame.height == 3
    assert sorted(frame["code"].to_list()) == ["HD101", "HD111", "HD111"]
    assert not list(tmp_path.glob(".*.part"))
    assert "count" in summary.read_text().splitlines()[0]


def test_truncated_gzip_keeps_findings_and_exits_2(tmp_path: Path) -> None:
    lines = []
    for _i in range(3000):
        lines += [access(1), info(1, "11-28 10:00:00")]
    lines += traceback(
        1, "11-28 10:00:05", "Unexpected token 200002 while expecting start token 200006"
    )
    lines += [info(1, "11-28 10:00:06")] * 20000
    data = gzip.compress(("\n".join(lines) + "\n").encode())
    (tmp_path / "cut.log.gz").write_bytes(data[: int(len(data) * 0.9)])
    result = run(["scan", "--format", "json", str(tmp_path)])
    assert result.exit_code == 2
    doc = json.loads(result.stdout)
    assert doc["totals"]["failures"] == 1 and doc["totals"]["partial"] == 1
    (report,) = doc["files"]
    assert report["status"] == "partial" and report["failures"] == 1
    assert "compressed data ends early" in report["reason"]
    assert "partial" in result.stderr


def _stream_log(vocab: Vocab, requests: int) -> str:
    """Access lines, throughput lines, tracebacks and streamed completions split over many lines."""
    lines: list[str] = []
    good = vocab.encode("<|channel|>final<|message|>Hello there<|return|>")
    bad = vocab.encode("<|channel|>final<|message|>Hello<|end|><|return|>")
    for n in range(requests):
        stamp = f"11-28 {10 + n // 3000:02d}:{(n // 50) % 60:02d}:{n % 60:02d}"
        lines.append(info(1 + n % 2, stamp))
        lines.append(access(1 + n % 2))
        ids = bad if n % 97 == 0 else good
        for k in range(0, len(ids), 3):
            finish = "stop" if k + 3 >= len(ids) else None
            lines.append(
                P.format(pid=1 + n % 2)
                + f"INFO {stamp} [logger.py:71] Generated response r{n} (streaming delta): "
                f"output: 'x', output_token_ids: {ids[k : k + 3]}, finish_reason: {finish}"
            )
        if n % 131 == 5:
            lines += traceback(1 + n % 2, stamp, "Unknown role: assistantassistant")
    return "\n".join(lines) + "\n"


def test_parallel_jobs_find_exactly_what_one_pass_finds(
    tmp_path: Path, vocab: Vocab, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "big.log").write_text(_stream_log(vocab, 1500))
    (tmp_path / "small.log").write_text(_stream_log(vocab, 10))
    monkeypatch.setattr(scanning, "POOL_BYTES", 0)
    serial = scan_folder(tmp_path, jobs=1)
    assert len(scanning.plan(discover([str(tmp_path)])[0])[0]) == 2  # whole files, no ranges
    parallel = scan_folder(tmp_path, jobs=2)

    def key(r: hd.ScanResult) -> list[tuple[int, str, str | None]]:
        return sorted((e.line, e.code, e.request_id) for e in r.events)

    assert key(parallel) == key(serial)
    lines = sum(len(p.read_text().splitlines()) for p in tmp_path.iterdir())
    assert parallel.lines == serial.lines == lines
    assert hd.summarize_scan(parallel).totals == hd.summarize_scan(serial).totals
    assert hd.summarize_scan(serial).totals["requests"] == 1510
    codes = Counter(e.code for e in serial.events if e.file.endswith("big.log"))
    assert codes["HD111"] == 16 and codes["HD121"] == 12  # every 97th replay, every 131st log


def test_scan_finds_what_explain_finds(tmp_path: Path) -> None:
    from harmony_doctor.logs import extract_text

    text = (Path(__file__).parents[2] / "samples" / "vllm-traceback.log").read_text()
    (tmp_path / "x.log").write_text(text)
    logged = [(e.line, e.kind, e.code) for e in extract_text(text)]
    scanned = [(e.line, e.kind, e.code) for e in scan_folder(tmp_path).events if e.source == "log"]
    assert scanned == logged and logged


def test_interleaved_processes_are_assembled_per_prefix(tmp_path: Path) -> None:
    a = traceback(
        11, "11-28 10:00:05", "Unexpected token 200002 while expecting start token 200006"
    )
    b = traceback(22, "11-28 10:00:05", "Unknown role: assistantassistant")
    mixed = [line for pair in zip(a, b, strict=True) for line in pair]
    (tmp_path / "mixed.log").write_text("\n".join(mixed) + "\n")
    events = scan_folder(tmp_path).events
    assert sorted((e.pid, e.code) for e in events) == [(11, "HD111"), (22, "HD121")]
    assert {e.harmony_version for e in events} == {">=0.0.5"}


def test_a_scan_that_read_nothing_says_so(tmp_path: Path) -> None:
    """An empty folder, a selection that matched nothing, inputs all skipped or all empty: the
    result reads nothing (which must not pass as clean); one line read is enough to say more."""
    import harmony_doctor as hd

    (tmp_path / "empty").mkdir()
    (tmp_path / "zero.log").write_text("")
    (tmp_path / "one.log").write_text("INFO fine\n")
    assert hd.scan_paths([tmp_path / "empty"]).nothing_read
    assert hd.scan_paths([tmp_path / "zero.log"]).nothing_read
    assert hd.scan_paths([tmp_path / "missing.log"]).nothing_read
    assert hd.scan_paths([tmp_path], globs=["nomatch*"]).nothing_read
    assert not hd.scan_paths([tmp_path]).nothing_read
    assert not hd.scan_paths([tmp_path / "one.log", tmp_path / "missing.log"]).nothing_read
