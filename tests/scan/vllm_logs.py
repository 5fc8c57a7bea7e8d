"""Synthetic vLLM server logs the scan tests write: tracebacks, access lines, a small folder."""

from __future__ import annotations

import gzip
from datetime import datetime
from pathlib import Path

from harmony_doctor.inputs.files import discover
from harmony_doctor.scan import run as scanning
from harmony_doctor.scan.records import ScanOptions, ScanResult

P = "(APIServer pid={pid}) "


def traceback(pid: int, stamp: str, message: str) -> list[str]:
    prefix = P.format(pid=pid) + f"ERROR {stamp} [serving_chat.py:1145] "
    return [
        prefix + "Error in chat completion stream generator.",
        prefix + "Traceback (most recent call last):",
        prefix
        + '  File "/usr/lib/python3.12/site-packages/vllm/entrypoints/openai/serving_chat.py", line 681, in chat_completion_stream_generator',
        prefix + "    harmony_parser.process(token_id)",
        prefix
        + '  File "/usr/lib/python3.12/site-packages/openai_harmony/__init__.py", line 637, in process',
        prefix + "    self._inner.process(token)",
        prefix + f"openai_harmony.HarmonyError: {message}",
    ]


def access(pid: int) -> str:
    return (
        P.format(pid=pid) + 'INFO:     10.0.0.2:5555 - "POST /v1/chat/completions HTTP/1.1" 200 OK'
    )


def info(pid: int, stamp: str) -> str:
    return (
        P.format(pid=pid)
        + f"INFO {stamp} [loggers.py:123] Engine 000: Avg prompt throughput: 1.0 tokens/s"
    )


def build_logs(root: Path) -> None:
    day1 = [info(1, "11-27 10:00:00")] + [access(1)] * 8
    day1 += traceback(
        1, "11-27 10:00:05", "Unexpected token 200002 while expecting start token 200006"
    )
    day1 += traceback(
        1,
        "11-27 10:00:09",
        'unexpected tokens remaining in message header: Some("I must refuse this request")',
    )
    (root / "vllm.log.1").write_text("\n".join(day1) + "\n")
    day2 = [info(2, "11-28 11:00:00")]
    day2 += [access(2) for _ in range(4)]
    day2 += traceback(
        2, "11-28 11:00:03", "Unexpected token 200002 while expecting start token 200006"
    )
    (root / "vllm.log.gz").write_bytes(gzip.compress(("\n".join(day2) + "\n").encode()))
    (root / "quiet.log").write_text(info(3, "11-28 12:00:00") + "\n" + access(3) + "\n")


def scan_folder(root: Path, jobs: int = 1) -> ScanResult:
    sources, skipped = discover([str(root)])
    options = ScanOptions(jobs=jobs)
    return scanning.scan(sources, options, skipped=skipped, now=datetime(2026, 11, 30))
