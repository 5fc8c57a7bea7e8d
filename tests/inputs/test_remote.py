"""URLs (inputs/remote.py): scan and report read S3 objects, prefixes and globs as they read
local files, against moto's S3 server that the test starts on 127.0.0.1 (never the network)."""

from __future__ import annotations

import gzip
import json
import logging
import os
import shutil
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from harmony_doctor.errors import InputError
from harmony_doctor.inputs import remote
from tests.helpers import SAMPLES, run

BUCKET = "hd-fleet"
COMPRESSED = ("vllm-traceback.log", "sglang-exception-group.log")  # uploaded as .gz


def _needs(module: str) -> None:
    pytest.importorskip(module, reason=f"{module} is not installed (pip install -e '.[dev]')")


@pytest.fixture(scope="module")
def s3(loopback_only: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """moto's S3 server on 127.0.0.1 (a free port), the environment pointing at it, a bucket;
    stopped, and the environment restored, when the module's tests are done."""
    for module in ("fsspec", "s3fs", "moto.server", "boto3"):
        _needs(module)
    import boto3
    import s3fs
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request on stderr
    server = ThreadedMotoServer(ip_address=loopback_only, port=0, verbose=False)
    server.start()
    home = tmp_path_factory.mktemp("aws")
    with pytest.MonkeyPatch.context() as env:
        host, port = server.get_host_and_port()
        for name, value in {
            "AWS_ACCESS_KEY_ID": "fake",
            "AWS_SECRET_ACCESS_KEY": "fake",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ENDPOINT_URL": f"http://{host}:{port}",
            # Nothing of this machine's AWS set-up is read, and no metadata service is asked.
            "AWS_CONFIG_FILE": str(home / "config"),
            "AWS_SHARED_CREDENTIALS_FILE": str(home / "credentials"),
            "AWS_EC2_METADATA_DISABLED": "true",
        }.items():
            env.setenv(name, value)
        env.delenv("AWS_PROFILE", raising=False)
        s3fs.S3FileSystem.clear_instance_cache()
        client = boto3.client("s3")
        try:
            client.create_bucket(Bucket=BUCKET)
            yield client
        finally:
            client.close()
            s3fs.S3FileSystem.clear_instance_cache()
            server.stop()


@pytest.fixture(scope="module")
def logs(s3: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """samples/ as a local folder (two logs gzipped) and the same bytes under s3://BUCKET/logs/."""
    root = tmp_path_factory.mktemp("local") / "logs"
    root.mkdir()
    for path in sorted(SAMPLES.iterdir()):
        if path.name in COMPRESSED:
            (root / f"{path.name}.gz").write_bytes(gzip.compress(path.read_bytes(), mtime=0))
        else:
            shutil.copyfile(path, root / path.name)
    for path in sorted(root.iterdir()):
        s3.put_object(Bucket=BUCKET, Key=f"logs/{path.name}", Body=path.read_bytes())
    return root


def _scan(*args: str) -> dict[str, Any]:
    result = run(["scan", *args, "--origin", "fleet", "--format", "json", "--exit-zero"])
    assert result.exit_code == 0, result.stderr
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


def _named(doc: dict[str, Any], prefix: str) -> dict[str, Any]:
    """A summary with its file names relative to `prefix` (a folder or a URL)."""
    text = json.dumps(doc).replace(prefix.rstrip("/") + "/", "")
    named: dict[str, Any] = json.loads(text)
    return named


def _events(path: Path, prefix: str) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    for row in rows:
        row["file"] = row["file"].removeprefix(prefix.rstrip("/") + "/")
    return rows


def test_scan_of_a_bucket_prefix_equals_the_local_scan(logs: Path, tmp_path: Path) -> None:
    local_events, remote_events = tmp_path / "local.jsonl", tmp_path / "remote.jsonl"
    local = _scan(str(logs), "-j", "1", "--events", str(local_events))
    url = f"s3://{BUCKET}/logs/"
    found = _scan(url, "-j", "1", "--events", str(remote_events))
    assert local["totals"]["failures"] > 0 and local["totals"]["requests"] > 0
    assert local["totals"]["rate"] is not None
    assert _named(found, url) == _named(local, str(logs))  # counts, rates, files, examples
    assert _events(remote_events, url) == _events(local_events, str(logs))
    assert {f["path"] for f in found["files"]} >= {f"{url}vllm-traceback.log.gz"}


def test_a_glob_in_workers_equals_the_local_scan_of_the_same_files(logs: Path) -> None:
    # Two worker processes (spawned): each opens the URLs it is given.
    url = f"s3://{BUCKET}/logs/*.log*"
    found = _scan(url, "-j", "2", "--by", "code,file,hour")
    local = _scan(*sorted(str(p) for p in logs.glob("*.log*")), "-j", "1", "--by", "code,file,hour")
    assert len(found["files"]) == 5
    assert _named(found, f"s3://{BUCKET}/logs") == _named(local, str(logs))


def test_report_reads_event_files_in_the_bucket(logs: Path, s3: Any, tmp_path: Path) -> None:
    events = tmp_path / "events.parquet"
    run(["scan", str(logs), "-j", "1", "--origin", "fleet", "--events", str(events)])
    for path in (events, tmp_path / "events.requests.parquet"):
        s3.put_object(Bucket=BUCKET, Key=f"events/{path.name}", Body=path.read_bytes())
    local = run(["report", str(events), "--format", "json", "--by", "code,origin"])
    for url in (f"s3://{BUCKET}/events/events.parquet", f"s3://{BUCKET}/events/events.p*"):
        found = run(["report", url, "--format", "json", "--by", "code,origin"])
        assert found.exit_code == local.exit_code == 1 and found.stderr == ""
        doc, expected = json.loads(found.stdout), json.loads(local.stdout)
        assert doc["groups"] == expected["groups"] and doc["totals"] == expected["totals"]
        assert doc["totals"]["rate"] is not None  # the tallies beside were read too
        assert doc["files"][0]["path"] == f"s3://{BUCKET}/events/events.parquet"


def test_missing_objects_are_input_errors(s3: Any) -> None:
    missing = run(["scan", f"s3://{BUCKET}/nothing/here.log"])
    assert missing.exit_code == 2
    assert f"s3://{BUCKET}/nothing/here.log: not found" in missing.stderr
    assert "no object matches" in run(["scan", f"s3://{BUCKET}/logs/*.nope"]).stderr
    with pytest.raises(InputError, match="not found"):
        remote.open_url(f"s3://{BUCKET}/logs/absent.log")
    report = run(["report", f"s3://no-such-bucket-{os.getpid()}/events.csv"])
    assert report.exit_code == 2 and "not found" in report.stderr


def test_scan_file_reads_a_url_with_its_last_modified_time(logs: Path, s3: Any) -> None:
    import harmony_doctor as hd

    url = f"s3://{BUCKET}/logs/vllm-traceback.log.gz"
    by_url = hd.scan_file(url, hd.ScanOptions(origin="fleet"))
    by_path = hd.scan_file(logs / "vllm-traceback.log.gz", hd.ScanOptions(origin="fleet"))
    assert by_url.report.path == url and by_url.events
    assert [e.timestamp for e in by_url.events] == [e.timestamp for e in by_path.events]
    head = s3.head_object(Bucket=BUCKET, Key="logs/vllm-traceback.log.gz")
    _, _, modified = remote.open_url(url)
    assert modified == head["LastModified"].astimezone().replace(tzinfo=None)


def test_year_less_stamps_take_the_objects_year(monkeypatch: pytest.MonkeyPatch) -> None:
    # vLLM stamps have no year ("11-12 14:02:13"): the object's last-modified time dates them.
    import io

    import harmony_doctor as hd

    data = (SAMPLES / "vllm-traceback.log").read_bytes()
    modified = datetime(2019, 12, 31, 23, 0)
    from harmony_doctor.inputs.files import Source
    from harmony_doctor.scan import run as scan_run
    from harmony_doctor.scan.run import scan

    # (by the module: the dotted name "harmony_doctor.scan" is the verb at the top level)
    monkeypatch.setattr(scan_run, "open_url", lambda url: (io.BytesIO(data), url, modified))

    result = scan([Source("s3://b/vllm.log", None, url=True)], hd.ScanOptions(jobs=1))
    assert result.events and all((e.timestamp or "").startswith("2019-") for e in result.events)


def test_without_the_extra_a_url_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "fsspec", None)  # as if harmony-doctor[remote] were absent
    for call in (remote.expand_url, remote.open_url):
        with pytest.raises(InputError, match=r"install harmony-doctor\[remote\] for URLs"):
            call("s3://bucket/logs/")
    skipped = run(["scan", "s3://bucket/logs/"])
    assert skipped.exit_code == 2 and "install harmony-doctor[remote]" in skipped.stderr


def test_errors_say_what_to_fix() -> None:
    class NoCredentialsError(Exception):
        pass

    said = {
        "credentials": remote._input_error("s3://b/k", NoCredentialsError("Unable to locate")),
        "not found": remote._input_error("s3://b/k", FileNotFoundError("b/k")),
        "permission denied": remote._input_error("s3://b/k", PermissionError("AccessDenied")),
    }
    for words, error in said.items():
        assert words in str(error) and str(error).startswith("cannot read s3://b/k: ")


def test_modified_times_of_each_filesystem_are_local_times() -> None:
    utc = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    local = utc.astimezone().replace(tzinfo=None)
    assert remote.modified_time({"LastModified": utc}) == local  # s3fs
    assert remote.modified_time({"last_modified": utc}) == local  # adlfs
    assert remote.modified_time({"updated": "2026-01-02T03:04:05Z"}) == local  # gcsfs
    assert remote.modified_time({"mtime": utc.timestamp()}) == local
    assert remote.modified_time({"size": 3}) is None


def test_urls_are_told_from_paths() -> None:
    for url in ("s3://b/k", "gs://b/k", "az://c/k", "https://h/k.log", "file:///tmp/x"):
        assert remote.is_url(url)
    for path in ("logs/", "-", "C:\\logs\\a.log", "a:b", "://x"):
        assert not remote.is_url(path)
