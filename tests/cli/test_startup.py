"""Issue 12 bullet 3: what `--help` and `explain` on a log load (latency is benchmarked, in
benchmarks/startup.py, never asserted here)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
_HEAVY = ("tiktoken", "openai_harmony", "polars")


def _loaded_after(args: list[str], env: dict[str, str] | None = None) -> list[str]:
    code = (
        "import sys\n"
        "from harmony_doctor.cli import app as cli\n"
        f"try:\n    cli.main({args!r})\nexcept SystemExit:\n    pass\n"
        f"print([m for m in {_HEAVY!r} if m in sys.modules], file=sys.stderr)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    import ast

    return list(ast.literal_eval(out.stderr.strip().splitlines()[-1]))


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["explain", "--help"],
        ["explain", str(SAMPLES / "vllm-traceback.log")],
        ["explain", str(SAMPLES / "other-engines.log")],  # a log without token ids
    ],
    ids=["help", "explain-help", "explain-traceback", "explain-log"],
)
def test_latency_help_and_log_explain_load_no_heavy_module(args: list[str]) -> None:
    assert _loaded_after(args) == []


def test_latency_token_explain_does_not_build_tiktoken(tmp_path: Path) -> None:
    import os

    env = dict(os.environ, HARMONY_DOCTOR_CACHE=str(tmp_path))
    loaded = _loaded_after(["explain", str(SAMPLES / "tool-call.harmony.txt")], env)
    assert "tiktoken" not in loaded and "polars" not in loaded
