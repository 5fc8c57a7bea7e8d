"""Scan many logs with Dask: one future per file, merged into the summary `scan` prints.

The listing is the one `scan` makes (folders recursively, URLs, prefixes and globs such as
s3://bucket/logs/*.gz with harmony-doctor[remote]); each file is scanned by
`harmony_doctor.scan_file` on a Dask worker (a process of a LocalCluster started here, or of
the scheduler given); the client merges the picklable results with `harmony_doctor.merge` and
prints the same table, JSON or CSV as `scan`, with the same counts and rates.

    pip install 'harmony-doctor[remote,dask]'
    python examples/dask_scan.py s3://bucket/logs/ --by code,file --format json
    python examples/dask_scan.py /var/log/vllm/ --workers 2           # a LocalCluster here
    python examples/dask_scan.py s3://bucket/logs/ --scheduler tcp://scheduler:8786

Local paths must be readable where the tasks run: on one machine, or on a shared file system;
on a cluster, read object storage (every worker needs the credentials in its environment).
Exit codes are scan's: 0 clean, 1 failures found, 2 unreadable.
"""

from __future__ import annotations

import argparse
import socket
import sys
from contextlib import ExitStack
from dataclasses import asdict
from pathlib import Path

from dask.distributed import Client, LocalCluster

import harmony_doctor as hd
from harmony_doctor.cli.summary import show_summary
from harmony_doctor.errors import ExitCode
from harmony_doctor.inputs.sources import discover
from harmony_doctor.scan.records import FileReport
from harmony_doctor.scan.summary import group_keys, per_day, scan_totals


def scan_with_dask(client: Client, inputs: list[str], options: hd.ScanOptions) -> hd.ScanResult:
    """What `harmony-doctor scan INPUTS` finds, each file scanned by a Dask worker."""
    sources, skipped = discover(inputs)
    labels = list(dict.fromkeys(s.label for s in sources))  # a file named twice is read once
    if any(s.path is None and not s.url for s in sources):
        raise hd.InputError("standard input cannot be sent to Dask workers: name files or URLs")
    futures = client.map(hd.scan_file, labels, options=options, retries=2)
    scans: list[hd.FileScan] = client.gather(futures)
    # In scan's order: what could not be read, then files scan itself wrote, then the logs.
    scans.sort(key=lambda found: found.report.status != "ignored")
    unread = [
        hd.FileScan((), (), FileReport(s.label, "skipped", s.reason, 0, 0, 0)) for s in skipped
    ]
    return hd.merge([*unread, *scans])


def write_events(result: hd.ScanResult, path: Path) -> list[str]:
    """The events and, beside them, the request tallies, as `scan --events PATH` writes them
    (for `harmony-doctor report`); the errors of those that could not be written."""
    from harmony_doctor.inputs.events import requests_path
    from harmony_doctor.output.files import write_tables
    from harmony_doctor.scan.summary import events_frame, tally_table

    return write_tables(
        [
            (path, lambda: events_frame(result.events)),
            (requests_path(path), lambda: tally_table(result.requests)),
        ]
    )


def show(result: hd.ScanResult, by: list[str], output: str, top: int) -> int:
    """The summary `scan` prints, and scan's exit code."""
    keys = group_keys(by)
    table = hd.summarize(result, keys)
    files = [asdict(f) for f in result.files]
    totals, days = scan_totals(result), per_day(result)
    show_summary(table, keys, totals, days, files, output, top, "auto")  # type: ignore[arg-type]
    for f in result.files:
        if f.status != "ok":
            print(f"harmony-doctor: {f.status} {f.path}: {f.reason}", file=sys.stderr)
    if any(f.status == "skipped" for f in result.files):
        return ExitCode.ERROR
    return ExitCode.FINDINGS if result.events else ExitCode.CLEAN


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("inputs", nargs="+", help="Files, folders, URLs, prefixes or globs.")
    parser.add_argument("--by", action="append", default=[], help="Group keys, as scan's --by.")
    parser.add_argument("--format", default="table", choices=["table", "json", "csv"])
    parser.add_argument("--top", type=int, default=20)
    parser.add_argument("--events", type=Path, help="Also write the events, as scan --events.")
    parser.add_argument("--origin", help="Name on every event and count (default: this host).")
    parser.add_argument("--scheduler", help="A Dask scheduler (default: a LocalCluster here).")
    parser.add_argument("--workers", type=int, default=2, help="Processes of the LocalCluster.")
    args = parser.parse_args(argv)
    # One origin for the whole run, as scan has: not the host name of each worker.
    options = hd.ScanOptions(origin=args.origin or socket.gethostname())
    with ExitStack() as stack:
        if args.scheduler:
            client = stack.enter_context(Client(args.scheduler))
        else:  # worker processes on this machine for this run only, with no dashboard
            cluster = LocalCluster(
                n_workers=args.workers,
                threads_per_worker=1,  # scanning holds the GIL: one file per process
                processes=True,
                dashboard_address=None,
            )
            stack.enter_context(cluster)
            client = stack.enter_context(Client(cluster))
        try:
            result = scan_with_dask(client, args.inputs, options)
        except hd.InputError as exc:
            print(f"harmony-doctor: {exc}", file=sys.stderr)
            return ExitCode.ERROR
    failed = write_events(result, args.events) if args.events else []
    for error in failed:
        print(f"harmony-doctor: {error}", file=sys.stderr)
    code = show(result, args.by, args.format, args.top)
    return ExitCode.ERROR if failed else code


if __name__ == "__main__":
    sys.exit(main())
