"""Fleet scale: per-host scans (events + request tallies, --origin) reported together, and
scan_file mapped over files in other processes, give what one scan over all the logs gives."""

from __future__ import annotations

import gzip
import json
import multiprocessing
import pickle
import re
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import harmony_doctor as hd
from harmony_doctor import advanced
from harmony_doctor.errors import InputError
from harmony_doctor.output.words import stated
from harmony_doctor.scan.records import ScanOptions
from tests.helpers import run
from tests.scan.vllm_logs import access, info, traceback

HOSTS = ("host1", "host2", "host3")
LEFTOVER = 'unexpected tokens remaining in message header: Some("I must refuse this request")'
UNEXPECTED = "Unexpected token 200002 while expecting start token 200006"
# Groupings compared: plain, request keys (rates split), and the origin-aware ones.
BYS = ("code", "pid,hour", "day,code", "file", "origin", "origin,file,pid", "server,origin")
RATE_KEYS = ("requests", "failures", "rate", "rate_note")


def _vllm_log(seed: int, pids: tuple[int, ...], days: tuple[int, ...]) -> str:
    """Several processes over many hours: access lines (requests) and failures in some hours."""
    lines: list[str] = []
    for day in days:
        for hour in range(0, 24, 5):
            for pid in pids:
                lines.append(info(pid, f"11-{day:02d} {hour:02d}:00:00"))
                lines += [access(pid)] * (2 + (seed + hour + pid) % 4)
                if (seed + day + hour + pid) % 3 == 0:
                    message = LEFTOVER if (hour + pid) % 2 else UNEXPECTED
                    lines += traceback(pid, f"11-{day:02d} {hour:02d}:00:30", message)
    return "\n".join(lines) + "\n"


def build_fleet(root: Path) -> list[Path]:
    """Three hosts' log folders; every host has a `vllm.log`, one a rotated gzip, one a log
    with failures but no requests (its failures count in no rate)."""
    folders = []
    for number, host in enumerate(HOSTS, start=1):
        folder = root / host
        folder.mkdir()
        pids = (number * 10, number * 10 + 1)
        (folder / "vllm.log").write_text(_vllm_log(number, pids, (27, 28)))
        folders.append(folder)
    (root / "host2" / "vllm.log.1.gz").write_bytes(
        gzip.compress(_vllm_log(7, (5, 6), (26,)).encode())
    )
    (root / "host3" / "bare.log").write_text("\n".join(traceback(9, "11-28 09:00:00", UNEXPECTED)))
    return folders


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return build_fleet(tmp_path_factory.mktemp("fleet"))


def _doc(args: list[str]) -> dict[str, Any]:
    result = run([*args, "--format", "json"])
    assert result.exit_code == 1, result.stderr
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def _groups(rows: list[dict[str, Any]], by: list[str]) -> dict[tuple[Any, ...], dict[str, Any]]:
    return {tuple(row[k] for k in by): row for row in rows}


def _unqualified(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Report's `origin:file` names (and examples) as one scan's plain file names."""
    prefix = re.compile(rf"^(?:{'|'.join(HOSTS)}):")
    out = []
    for row in rows:
        row = dict(row)
        for key in ("file", "example"):
            if isinstance(row.get(key), str):
                row[key] = prefix.sub("", row[key])
        out.append(row)
    return out


def _library_expected(folders: list[Path], by: str) -> list[dict[str, Any]]:
    """The summary of every log (its rotated parts read as one) scanned on its own with its
    host's origin, merged, its ratios as the JSON states them (words.stated)."""
    scans = [
        scan
        for folder in folders
        for stream in hd.list_inputs([folder]).streams
        for scan in hd.scan_rotated(stream, ScanOptions(origin=folder.name))
    ]
    return [stated(g) for g in hd.summarize(hd.merge(scans), by.split(",")).to_dicts()]


@pytest.mark.parametrize(
    "formats",
    [
        ("csv", "csv", "csv"),
        ("jsonl", "jsonl", "jsonl"),
        ("parquet", "parquet", "parquet"),
        ("csv", "jsonl", "parquet"),
    ],
)
def test_per_host_scan_then_report_equals_one_scan(
    fleet: list[Path], tmp_path: Path, formats: tuple[str, str, str]
) -> None:
    exports = []
    for folder, kind in zip(fleet, formats, strict=True):
        out = tmp_path / f"{folder.name}.{kind}"
        _doc(["scan", str(folder), "-j", "1", "--origin", folder.name, "--events", str(out)])
        assert out.with_name(f"{folder.name}.requests.{kind}").is_file()
        exports.append(str(out))
    for by in BYS:
        keys = by.split(",")
        single = _doc(["scan", *map(str, fleet), "-j", "1", "--by", by])
        reported = _doc(["report", *exports, "--by", by])
        assert {k: reported["totals"][k] for k in RATE_KEYS} == {
            k: single["totals"][k] for k in RATE_KEYS
        }
        assert reported["totals"]["rate"] is not None and reported["totals"]["requests"] > 0
        if "origin" in keys:  # one scan has one origin: compare with per-host origins merged
            expected = _groups(_library_expected(fleet, by), keys)
            assert _groups(reported["groups"], keys) == expected
            assert len(expected) >= len(HOSTS)
        else:
            expected = _groups(single["groups"], keys)
            assert _groups(_unqualified(reported["groups"]), keys) == expected
        assert any(g["rate"] is not None for g in reported["groups"])


def test_scan_by_origin_gives_one_group_with_the_rate(fleet: list[Path]) -> None:
    doc = _doc(["scan", *map(str, fleet), "-j", "1", "--origin", "edge-7", "--by", "origin"])
    (group,) = doc["groups"]
    assert group["origin"] == "edge-7" and group["rate"] == doc["totals"]["rate"] is not None


def test_two_hosts_same_file_name_stay_apart(
    fleet: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    exports = []
    for folder in fleet[:2]:
        monkeypatch.chdir(folder)  # both logs are labelled plain `vllm.log`
        out = tmp_path / f"{folder.name}.jsonl"
        _doc(["scan", "vllm.log", "-j", "1", "--origin", folder.name, "--events", str(out)])
        exports.append(str(out))
    doc = _doc(["report", *exports, "--by", "file"])
    files = {g["file"]: g for g in doc["groups"]}
    assert set(files) == {"host1:vllm.log", "host2:vllm.log"}
    for folder in fleet[:2]:
        alone = hd.scan_file(folder / "vllm.log", ScanOptions(origin=folder.name))
        group = files[f"{folder.name}:vllm.log"]
        assert group["count"] == len(alone.events)
        assert group["requests"] == sum(t.count for t in alone.tallies)


def test_old_event_files_without_tallies_still_report(fleet: list[Path], tmp_path: Path) -> None:
    out = tmp_path / "old.csv"
    _doc(["scan", str(fleet[0]), "-j", "1", "--events", str(out)])
    out.with_name("old.requests.csv").unlink()
    pl.read_csv(out).drop("origin").write_csv(out)  # as versions before origins wrote it
    result = run(["report", str(out), "--format", "json"])
    doc = json.loads(result.stdout)
    assert result.exit_code == 1 and doc["totals"]["failures"] > 0
    assert doc["totals"]["requests"] is None and doc["totals"]["rate"] is None
    assert all(g["rate"] is None for g in doc["groups"])
    assert "no request counts beside" in result.stderr and "old.requests.csv" in result.stderr


def test_tallies_written_by_scan_are_not_scanned_as_logs(fleet: list[Path], tmp_path: Path) -> None:
    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "vllm.log").write_bytes((fleet[0] / "vllm.log").read_bytes())
    for kind in ("csv", "jsonl", "parquet"):
        _doc(["scan", str(folder / "vllm.log"), "-j", "1", "--events", str(folder / f"e.{kind}")])
    result = hd.scan_paths([folder])
    ignored = {Path(f.path).name for f in result.files if f.status == "ignored"}
    assert {f"e.requests.{k}" for k in ("csv", "jsonl", "parquet")} <= ignored


def test_file_scan_and_options_pickle(fleet: list[Path]) -> None:
    options = ScanOptions(origin="host1", redact=True)
    found = hd.scan_file(fleet[0] / "vllm.log", options)
    assert pickle.loads(pickle.dumps(options)) == options
    back = pickle.loads(pickle.dumps(found))
    assert back == found and found.events and found.tallies
    assert {e.origin for e in found.events} == {t.origin for t in found.tallies} == {"host1"}


def test_schema_is_fixed_for_empty_and_full_scans(fleet: list[Path], tmp_path: Path) -> None:
    quiet = tmp_path / "quiet.log"
    quiet.write_text("nothing here\n")
    empty_events, empty_tallies = hd.empty_frames()
    for found in (hd.scan_file(quiet), hd.scan_file(fleet[0] / "vllm.log")):
        events, tallies = hd.frames(found)
        assert events.schema == empty_events.schema
        assert tallies.schema == empty_tallies.schema
    assert empty_events.schema["origin"] == pl.String and empty_tallies.schema["count"] == pl.Int64


def test_scan_stream_has_scan_files_shape(fleet: list[Path]) -> None:
    path = fleet[1] / "vllm.log.1.gz"
    by_file = hd.scan_file(path, ScanOptions(origin="h"))
    with open(path, "rb") as stream:
        by_stream = hd.scan_stream(stream, str(path), ScanOptions(origin="h"))
    assert isinstance(by_stream, hd.FileScan) and by_stream.events == by_file.events
    assert by_stream.tallies == by_file.tallies and by_file.events


def test_urls_go_through_the_remote_hook(monkeypatch: pytest.MonkeyPatch) -> None:
    # As if the remote extra were absent: with fsspec there, s3fs would look for credentials
    # on the network (tests/inputs/test_remote.py reads URLs from a local S3 server instead).
    monkeypatch.setitem(sys.modules, "fsspec", None)
    with pytest.raises(InputError, match=r"cannot read s3://bucket/vllm\.log"):
        hd.scan_file("s3://bucket/vllm.log")


def _scan_in_worker(stream: tuple[str, ...], origin: str) -> tuple[hd.FileScan, ...]:
    return advanced.scan_rotated(stream, ScanOptions(origin=origin))


def test_scan_rotated_in_spawned_pool_merges_to_scan(fleet: list[Path]) -> None:
    streams = hd.list_inputs(fleet).streams
    assert any(len(stream) > 1 for stream in streams), "the fleet has rotated logs"
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=2, mp_context=context) as pool:
        parts = list(pool.map(_scan_in_worker, streams, ["fleet"] * len(streams)))
    merged = hd.merge(scan for stream in parts for scan in stream)
    whole = hd.scan_paths(fleet, ScanOptions(origin="fleet", jobs=1))
    assert hd.summarize_scan(merged).totals == hd.summarize_scan(whole).totals
    assert merged.events
    for by in ("code", "file", "pid,hour", "origin"):
        assert hd.summarize(merged, by.split(",")).to_dicts() == (
            hd.summarize(whole, by.split(",")).to_dicts()
        )
