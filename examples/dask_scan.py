"""Scan many logs with Dask: one future per log, merged into the summary `scan` prints.

The listing is the one `scan` makes (folders recursively, URLs, prefixes and globs such as
s3://bucket/logs/*.gz with harmony-doctor[remote]); each log (its rotated parts read as one
stream) is scanned by `harmony_doctor.advanced.scan_rotated` on a Dask worker (a process of a
LocalCluster started here, or of the scheduler given); the client merges the picklable
results with `harmony_doctor.advanced.merge` and prints the same table, JSON or CSV as `scan`, with
the same counts and rates.

    pip install 'harmony-doctor[remote,dask]'
    python examples/dask_scan.py s3://bucket/logs/ --by code,file --format json
    python examples/dask_scan.py /var/log/vllm/ --workers 2           # a LocalCluster here
    python examples/dask_scan.py s3://bucket/logs/ --scheduler tcp://scheduler:8786

Local paths must be readable where the tasks run: on one machine, or on a shared file system;
on a cluster, read object storage (every worker needs the credentials in its environment).
Exit codes are scan's: 0 clean, 1 failures found, 2 unreadable.
"""

from __future__ import annotations

import sys
from contextlib import ExitStack

import fleet
from dask.distributed import Client, LocalCluster

import harmony_doctor as hd
from harmony_doctor import advanced


def scan_with_dask(client: Client, inputs: list[str], options: hd.ScanOptions) -> hd.ScanResult:
    """What `harmony-doctor scan INPUTS` finds, each log scanned by a Dask worker."""
    found = fleet.listing(inputs, "Dask workers")
    futures = client.map(advanced.scan_rotated, found.streams, options=options, retries=2)
    scans: list[tuple[hd.FileScan, ...]] = client.gather(futures)
    return fleet.merged(found, scans)


def main(argv: list[str] | None = None) -> int:
    parser = fleet.arguments(__doc__.split("\n", 1)[0])
    parser.add_argument("--scheduler", help="A Dask scheduler (default: a LocalCluster here).")
    parser.add_argument("--workers", type=int, default=2, help="Processes of the LocalCluster.")
    args = parser.parse_args(argv)
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
        return fleet.finish(args, lambda: scan_with_dask(client, args.inputs, fleet.options(args)))


if __name__ == "__main__":
    sys.exit(main())
