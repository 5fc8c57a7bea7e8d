"""Peak memory of `harmony-doctor scan` against the number of failures a log holds.

    python benchmarks/memory.py [--counts 20000,100000,200000] [--dir DIR] [--json]

For each N, a small gzip holding N distinct logged failures as vLLM writes them (an `ERROR`
line with `openai_harmony.HarmonyError: unexpected tokens remaining in message header: [...]`,
each with its own request and token list, a `Received request` line before each) is scanned
with `python -m harmony_doctor scan FILE --format json` in a child process; its peak RSS
(resource.getrusage(RUSAGE_CHILDREN), one child per run) and CPU time are reported, with the
slope per failure between the smallest and the largest N: the figure that says whether memory
grows with the failures. The failures counted are checked against N.

A benchmark, not a test: tests/scan/test_spill.py holds the in-process bound.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any


def failure_lines(count: int) -> list[str]:
    """`count` distinct failures, each after its request line, one pid, a stamp per second."""
    lines = []
    for i in range(count):
        second = i % 86_400
        stamp = f"11-28 {second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d}"
        request = f"chatcmpl-{i:08x}"
        tokens = ", ".join(str(1000 + (i * 7 + k * 13) % 190_000) for k in range(3 + i % 5))
        lines.append(
            f"(APIServer pid=4121) INFO {stamp} [logger.py:71] Received request {request}: "
            "params: SamplingParams(n=1, temperature=1.0, max_tokens=512), "
            "prompt_token_ids: None, lora_request: None."
        )
        lines.append(
            f"(APIServer pid=4121) ERROR {stamp} [serving_chat.py:1145] request {request}: "
            "openai_harmony.HarmonyError: unexpected tokens remaining in message header: "
            f"[{tokens}]"
        )
    return lines


def write_log(path: Path, count: int) -> Path:
    """The gzip of `count` failures at `path` (kept when it exists: generated once)."""
    if not path.exists():
        with gzip.open(path, "wt", compresslevel=6) as out:
            out.write("\n".join(failure_lines(count)) + "\n")
    return path


def measure(path: Path) -> dict[str, Any]:
    """Peak RSS (MiB) and CPU seconds of one `scan --format json` of `path`, and its failures."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    run = subprocess.run(
        [sys.executable, "-m", "harmony_doctor", "scan", str(path), "--format", "json", "-j", "1"],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "NO_COLOR": "1"},
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if run.returncode not in (0, 1):
        raise SystemExit(f"scan of {path} failed ({run.returncode}): {run.stderr.strip()}")
    totals = json.loads(run.stdout)["totals"]
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    # ru_maxrss of RUSAGE_CHILDREN is the largest child's so far: each N runs in a fresh
    # interpreter (see main), so it is this child's
    return {"failures": totals["failures"], "peak_mib": after.ru_maxrss / 1024, "cpu_s": cpu}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--counts", default="20000,100000,200000")
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "hd-memory")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # a single N, in a child
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    if args.one is not None:
        found = measure(args.dir / f"failures-{args.one}.log.gz")
        print(json.dumps({"n": args.one, **found}))
        return
    rows = []
    for n in [int(c) for c in args.counts.split(",")]:
        # written here, not in the child that measures: a scan forked from the child that
        # built 200,000 lines started with its memory (ru_maxrss counts the forked copy), and
        # read 194 MiB where the scan alone peaks at 167
        write_log(args.dir / f"failures-{n}.log.gz", n)
        # each N in its own Python, so that ru_maxrss of its children is that N's scan only
        child = [sys.executable, __file__, "--one", str(n), "--dir", str(args.dir)]
        row = json.loads(subprocess.run(child, capture_output=True, text=True, check=True).stdout)
        if row["failures"] != n:
            row["mismatch"] = f"counted {row['failures']}, wrote {n}"
        rows.append(row)
    slope = None
    if len(rows) > 1 and rows[-1]["n"] != rows[0]["n"]:
        grown = (rows[-1]["peak_mib"] - rows[0]["peak_mib"]) * 1024 * 1024
        slope = grown / (rows[-1]["n"] - rows[0]["n"])
    if args.json:
        print(json.dumps({"runs": rows, "bytes_per_failure": slope}, indent=2))
        return
    for row in rows:
        extra = f"  MISMATCH {row['mismatch']}" if "mismatch" in row else ""
        print(
            f"N={row['n']:>8,}  peak {row['peak_mib']:7.1f} MiB  cpu {row['cpu_s']:6.1f} s{extra}"
        )
    if slope is not None:
        print(f"slope: {slope:,.0f} bytes per failure")


if __name__ == "__main__":
    main()
