"""Scan many logs with Ray: one task per log, merged into the summary `scan` prints.

The listing is the one `scan` makes (folders recursively, URLs, prefixes and globs such as
s3://bucket/logs/*.gz with harmony-doctor[remote]); each log (its rotated parts read as one
stream) is scanned by `harmony_doctor.advanced.scan_rotated` in a Ray task, wherever Ray places
it; the driver merges the picklable results with `harmony_doctor.advanced.merge` and prints the
same table, JSON or CSV as `scan`, with the same counts and rates.

    pip install 'harmony-doctor[remote,ray]'
    python examples/ray_scan.py s3://bucket/logs/ --by code,file --format json
    python examples/ray_scan.py /var/log/vllm/ --num-cpus 2          # Ray on this machine only
    RAY_ADDRESS=auto python examples/ray_scan.py s3://bucket/logs/    # an existing cluster

Local paths must be readable where the tasks run: on one machine, or on a shared file system;
on a cluster, read object storage (every worker needs the credentials: see
examples/kuberay-rayjob.yaml). Exit codes are scan's: 0 clean, 1 failures found, 2 unreadable.
"""

from __future__ import annotations

import os
import sys

import fleet
import ray

import harmony_doctor as hd
from harmony_doctor import advanced


@ray.remote(num_cpus=1, max_retries=2)
def scan_one(stream: tuple[str, ...], options: hd.ScanOptions) -> tuple[hd.FileScan, ...]:
    """One log (its rotated parts) or object, scanned in a Ray worker (its own process, maybe
    its own machine)."""
    return advanced.scan_rotated(stream, options)


def scan_with_ray(inputs: list[str], options: hd.ScanOptions) -> hd.ScanResult:
    """What `harmony-doctor scan INPUTS` finds, each log scanned in its own Ray task."""
    found = fleet.listing(inputs, "Ray tasks")
    scans = ray.get([scan_one.remote(x, options) for x in found.streams])
    return fleet.merged(found, scans)


def main(argv: list[str] | None = None) -> int:
    parser = fleet.arguments(__doc__.split("\n", 1)[0])
    parser.add_argument("--address", help="A Ray cluster (default: RAY_ADDRESS, or start one).")
    parser.add_argument("--num-cpus", type=int, help="CPUs of a Ray started here.")
    args = parser.parse_args(argv)
    address = args.address or os.environ.get("RAY_ADDRESS")
    if address:
        ray.init(address=address)
    else:  # a Ray for this run only, on this machine, with no dashboard
        ray.init(num_cpus=args.num_cpus, include_dashboard=False)
    try:
        return fleet.finish(args, lambda: scan_with_ray(args.inputs, fleet.options(args)))
    finally:
        ray.shutdown()


if __name__ == "__main__":
    sys.exit(main())
