"""The scan core alone: Python reference vs Rust core vs `rg -c HarmonyError`, in MB/s.

Generates a plain vLLM-style log (~256 MiB by default, access lines, received lines, id lines,
tracebacks with HarmonyError) in /tmp, then feeds it in 1 MiB chunks to each core.

    python benchmarks/core.py [--mb 256] [--path /tmp/hd-core-bench.log] [--skip-python] [--quiet]
    python benchmarks/core.py --log FILE [--skip-python]    # an existing plain log as it is

--quiet: a log where 1% of the lines are requests (the default has 45%: every request line
costs per-line work; the rest of the stream is only searched).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import time
from pathlib import Path

from harmony_doctor.native import native_available
from harmony_doctor.scan.core import CoreLike, NativeCore
from harmony_doctor.scan.reference_core import Core

CHUNK = 1 << 20


def generate(path: Path, mib: int, scale: float) -> None:
    """Line kinds by thresholds on a uniform draw times `scale` (>1: fewer requests)."""
    rnd = random.Random(7)
    target = mib << 20
    with path.open("wb") as out:
        written = 0
        while written < target:
            block = []
            for _ in range(2000):
                pid = rnd.randrange(4)
                h, m, s = rnd.randrange(24), rnd.randrange(60), rnd.randrange(60)
                stamp = b"11-27 %02d:%02d:%02d" % (h, m, s)
                r = rnd.random() * scale
                if r < 0.35:
                    block.append(
                        b'(APIServer pid=%d) INFO %s [api_server.py:1] 127.0.0.1:5 - "POST /v1/chat/completions HTTP/1.1" 200 OK'  # noqa: E501
                        % (pid, stamp)
                    )
                elif r < 0.45:
                    block.append(
                        b"(APIServer pid=%d) INFO %s [logger.py:1] Received request chatcmpl-%d"
                        % (pid, stamp, rnd.randrange(10**9))
                    )
                elif r < 0.47:
                    block.append(
                        b"(APIServer pid=%d) INFO %s [logger.py:2] Generated response r%d: output: 'x', output_token_ids: [1, 2, 3], finish_reason: stop"  # noqa: E501
                        % (pid, stamp, rnd.randrange(10**9))
                    )
                elif r < 0.472:
                    block += [
                        b"(APIServer pid=%d) ERROR %s [serving_chat.py:1] Error in chat completion"
                        % (pid, stamp),
                        b"Traceback (most recent call last):",
                        b'  File "/vllm/entrypoints/openai/serving_chat.py", line 1, in chat',
                        b'openai_harmony.HarmonyError: unexpected tokens remaining in message header: Some("x")',  # noqa: E501
                    ]
                else:
                    block.append(
                        b"(APIServer pid=%d) INFO %s [metrics.py:1] Avg prompt throughput: %d.1 tokens/s, Running: %d reqs"  # noqa: E501
                        % (pid, stamp, rnd.randrange(9999), rnd.randrange(64))
                    )
            data = b"\n".join(block) + b"\n"
            out.write(data)
            written += len(data)


def time_core(core: CoreLike, path: Path) -> tuple[float, float, int, int]:
    """Wall and CPU seconds (CPU: less sensitive to the machine's load), windows, id lines."""
    windows = ids = 0
    t0, c0 = time.perf_counter(), time.process_time()
    with path.open("rb") as f:
        while chunk := f.read(CHUNK):
            b = core.feed(chunk)
            windows += len(b.windows)
            ids += len(b.id_lines)
    b = core.finish()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return wall, cpu, windows + len(b.windows), ids + len(b.id_lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=256)
    ap.add_argument("--path", type=Path, default=Path("/tmp/hd-core-bench.log"))
    ap.add_argument("--skip-python", action="store_true")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--log", type=Path, help="time this plain log (e.g. from make_logs.py)")
    args = ap.parse_args()
    if args.log is not None:
        args.path = args.log
    elif args.quiet and args.path == ap.get_default("path"):
        args.path = Path("/tmp/hd-core-bench-quiet.log")
    if args.log is None and (not args.path.exists() or args.path.stat().st_size < (args.mb << 20)):
        generate(args.path, args.mb, 45.0 if args.quiet else 1.0)
    size = args.path.stat().st_size
    mb = size / 1e6
    print(f"log: {args.path} {mb:.0f} MB; load: {os.getloadavg()}")
    results = {}
    cores: list[tuple[str, type[Core] | type[NativeCore]]] = []
    if not args.skip_python:
        cores.append(("python reference", Core))
    if native_available():
        cores.append(("rust core", NativeCore))
    else:
        print("rust core: not built (harmony_doctor._native missing)")
    for name, cls in cores:
        core = cls()
        secs, cpu, windows, ids = time_core(core, args.path)
        st = core.stats()
        results[name] = (windows, ids, st.lines, st.access_lines, st.received_lines)
        print(
            f"{name:17s} {mb / secs:8.1f} MB/s  {secs:6.2f} s  ({mb / cpu:.0f} MB per CPU s)  "
            f"windows={windows} id_lines={ids} "
            f"lines={st.lines} access={st.access_lines} received={st.received_lines}"
        )
    if len(set(results.values())) > 1:
        print("MISMATCH between cores:", results)
    rg = shutil.which("rg")
    if rg:
        t0 = time.perf_counter()
        out = subprocess.run(
            [rg, "-c", "HarmonyError", str(args.path)], capture_output=True, check=False
        )
        secs = time.perf_counter() - t0
        print(
            f"{'rg -c HarmonyError':17s} {mb / secs:8.1f} MB/s  {secs:6.2f} s  count={out.stdout.decode().strip()}"  # noqa: E501
        )
    else:
        print("rg: not installed")


if __name__ == "__main__":
    main()
