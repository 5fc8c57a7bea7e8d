"""The peak memory of one harmony-doctor command run in a fresh process: its own high-water mark
(VmHWM, read as it exits), not getrusage's ru_maxrss, which Linux carries across exec from the
forked copy of its parent (a test worker of several hundred MiB would be measured instead)."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

# The bound the README states for scan, report and explain, whatever the content (issue 34).
BOUND_MIB = 200

_CHILD = """
import atexit, os, re, sys
def _peak():
    status = open('/proc/self/status').read()
    with open(os.environ['HD_TEST_PEAK'], 'w') as out:
        out.write(str(int(re.search(r'VmHWM:\\s*(\\d+)', status)[1]) // 1024))
atexit.register(_peak)
sys.argv = ['harmony-doctor', *sys.argv[1:]]
from harmony_doctor.cli.start import main
main()
"""


@dataclass(frozen=True)
class Peak:
    mib: int
    exit_code: int
    stdout: str
    stderr: str


def peak_of(args: list[str], where: Path, hang: float | None = None) -> Peak:
    """Run `harmony-doctor ARGS` in a fresh Python; its peak RSS (MiB) and what it said.
    `hang`: seconds after which the run is taken for a hang (generous: catches no slowness)."""
    if not Path("/proc/self/status").exists():
        pytest.skip("no /proc/self/status here to read a process's peak memory from")
    record = where / "peak.txt"
    env = {**os.environ, "HD_TEST_PEAK": str(record), "NO_COLOR": "1"}
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=hang,
    )
    return Peak(int(record.read_text()), done.returncode, done.stdout, done.stderr)
