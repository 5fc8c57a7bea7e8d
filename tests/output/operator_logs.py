"""Logs the operator-output tests scan: the synthetic vLLM folder plus a hostile file name and
message (markup, URLs, GitHub's command separators)."""

from __future__ import annotations

from pathlib import Path

from tests.scan.vllm_logs import access, build_logs, traceback

HOSTILE_NAME = "evil,name:100%<b>|[x].log"
HOSTILE_REMAINDER = "<img src=http://evil.example/x.png>, a: 50% | `x` [y](https://evil.example)"


def operator_logs(root: Path) -> Path:
    """A folder of logs: build_logs' three, and one with a hostile name and message."""
    root.mkdir()
    build_logs(root)
    hostile = [access(4), access(4)]
    hostile += traceback(
        4,
        "11-28 12:30:00",
        f'unexpected tokens remaining in message header: Some("{HOSTILE_REMAINDER}")',
    )
    (root / HOSTILE_NAME).write_text("\n".join(hostile) + "\n")
    return root
