"""Log extraction speed: `extract_errors` against a plain read-and-regex pass, side by side.

Builds a vLLM-style log (info and access lines with a failing traceback every `--every` lines),
then reports lines per second for the extractor and its ratio to the cheapest pass any log tool
makes (split the lines, one regex search each), plus `harmony-doctor explain` end to end on a
2,000-line excerpt (the issue's target: under a second).

    python benchmarks/logs.py [--lines 200000] [--every 500] [--json]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from harmony_doctor.logs import extract_errors

INFO = (
    "(APIServer pid=7) INFO 11-12 14:02:10 [loggers.py:127] Engine 000: Avg prompt throughput: "
    "812.4 tokens/s, Avg generation throughput: 96.1 tokens/s, Running: 4 reqs"
)
ACCESS = '(APIServer pid=7) INFO:     10.1.4.22:50412 - "POST /v1/chat/completions HTTP/1.1" 200 OK'
ERROR = "(APIServer pid=7) ERROR 11-12 14:02:13 [serving.py:1184] "
TRACEBACK = [
    "Traceback (most recent call last):",
    '  File "/v/site-packages/vllm/entrypoints/openai/serving_chat.py", line 702, in gen',
    "    harmony_parser.process(token_id)",
    '  File "/v/site-packages/openai_harmony/__init__.py", line 637, in process',
    "    self._inner.process(token)",
    'openai_harmony.HarmonyError: unexpected tokens remaining in message header: Some("to=f.x")',
]


def build(lines: int, every: int) -> list[str]:
    out: list[str] = []
    while len(out) < lines:
        out.extend([INFO, ACCESS] * (every // 2))
        out.extend(ERROR + line for line in TRACEBACK)
    return out[:lines]


def timed(run: Callable[[], object]) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=200_000)
    parser.add_argument("--every", type=int, default=500)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    log = build(args.lines, args.every)
    baseline_pattern = re.compile(r"HarmonyError")
    baseline = timed(lambda: sum(1 for line in log if baseline_pattern.search(line)))
    found: list[object] = []
    extract = timed(lambda: found.extend(extract_errors(log)))
    with tempfile.TemporaryDirectory() as folder:
        excerpt = Path(folder) / "excerpt.log"
        excerpt.write_text("\n".join(build(2000, args.every)) + "\n")
        command = [sys.executable, "-m", "harmony_doctor", "explain", str(excerpt)]
        explain = timed(lambda: subprocess.run(command, capture_output=True, check=False))
    result = {
        "lines": len(log),
        "failures": len(found),
        "extract_lines_per_s": round(len(log) / extract),
        "baseline_lines_per_s": round(len(log) / baseline),
        "extract_vs_baseline": round(extract / baseline, 1),
        "explain_2000_lines_s": round(explain, 3),
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for key, value in result.items():
            print(f"{key:24} {value}")


if __name__ == "__main__":
    main()
