"""scan's progress bar on a terminal's standard error: coloured as --color says (red team M6:
`--color never` still coloured it). Run in a pseudo-terminal, as a person at a terminal runs it."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "samples" / "vllm-traceback.log"
_COLOUR = re.compile(rb"\x1b\[(?:3[0-7]|9[0-7])m")  # a foreground colour


def _stderr_on_a_terminal(*args: str) -> bytes:
    """What scan writes to standard error when it is a terminal (standard output discarded)."""
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "TERM")}
    env.update(PYTHONPATH=str(ROOT), TERM="xterm-256color", COLUMNS="100")
    main, side = pty.openpty()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "harmony_doctor", "scan", str(SAMPLE), *args],
            stdout=subprocess.DEVNULL,
            stderr=side,
            cwd=ROOT,  # `python -m` imports from its folder first: this checkout's package
            env=env,
            timeout=120,
            check=False,
        )
        os.close(side)
        side = -1
        out = b""
        while True:
            try:
                chunk = os.read(main, 65536)
            except OSError:  # the terminal's other side is closed: all is read
                break
            if not chunk:
                break
            out += chunk
    finally:
        os.close(main)
        if side >= 0:
            os.close(side)
    assert done.returncode == 1, out
    return out


@pytest.mark.skipif(not SAMPLE.exists(), reason="the samples are not beside the tests")
def test_the_progress_bar_is_coloured_unless_colour_is_turned_off() -> None:
    coloured = _stderr_on_a_terminal()
    assert b"scanning" in coloured and _COLOUR.search(coloured), coloured
    plain = _stderr_on_a_terminal("--color", "never")
    assert b"scanning" in plain, plain  # drawn, with no colour
    assert not _COLOUR.search(plain), plain
