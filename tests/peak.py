"""The peak memory of one harmony-doctor command run in a fresh process: its own high-water mark
(VmHWM, read as it exits), not getrusage's ru_maxrss, which Linux carries across exec from the
forked copy of its parent (a test worker of several hundred MiB would be measured instead).

Two numbers, because one of them is not the tool's to keep: the peak RSS (`mib`) counts the
libraries' code mapped from disk (`file_mib`, polars' alone is tens of MiB), and how much of a
mapped file the kernel puts in a process's RSS depends on its page cache (large folios of a
file just written map whole): the same scan, same code, same input, measured 170 MiB in one
virtualenv and 179 MiB in a fresh copy of it (`RssFile` 53 against 60 MiB; `RssAnon` 115 in
both), and over 200 MiB once in CI. The bound the tests hold is on the tool's own memory,
`private_mib`: its anonymous pages at their peak, sampled each millisecond in the child, and
never less than the high-water mark less the files mapped at the end (they only grow).
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

# The bound the docs state for scan, report and explain, whatever the content (issue 34): about
# 200 MiB of peak RSS, of which the tool's own memory (anonymous pages) under PRIVATE_BOUND_MIB
# (the largest the property test's shapes reach: 144 MiB, openai-harmony's tables loaded for a
# folder's token files and three 4 MiB failing lines read) and the rest the code of the
# libraries it runs, mapped from disk (about 50 MiB here, more on a fresh install).
BOUND_MIB = 200
PRIVATE_BOUND_MIB = 160

_CHILD = """
import atexit, os, re, sys, threading, time
def _status():
    status = open('/proc/self/status').read()
    return {k: int(re.search(k + r':\\s*(\\d+)', status)[1]) // 1024 for k in ('VmHWM', 'RssAnon', 'RssFile')}
_seen = [0]
def _sample():
    while True:
        _seen[0] = max(_seen[0], _status()['RssAnon'])
        time.sleep(0.001)
def _peak():
    last = _status()
    private = max(_seen[0], last['RssAnon'], last['VmHWM'] - last['RssFile'])
    with open(os.environ['HD_TEST_PEAK'], 'w') as out:
        out.write(f"{last['VmHWM']} {private} {last['RssFile']}")
threading.Thread(target=_sample, daemon=True).start()
atexit.register(_peak)
sys.argv = ['harmony-doctor', *sys.argv[1:]]
from harmony_doctor.cli.start import main
main()
"""


@dataclass(frozen=True)
class Peak:
    mib: int  # peak RSS (VmHWM)
    private_mib: int  # the tool's own memory at its peak (see the module's docstring)
    file_mib: int  # files mapped at the end (the libraries' code): mib less private_mib, about
    exit_code: int
    stdout: str
    stderr: str

    @property
    def within_bound(self) -> bool:
        return self.private_mib < PRIVATE_BOUND_MIB

    def __str__(self) -> str:
        return (
            f"{self.private_mib} MiB of the tool's own memory at its peak (bound "
            f"{PRIVATE_BOUND_MIB}); peak RSS {self.mib} MiB with {self.file_mib} MiB of files mapped"
        )


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
    mib, private, mapped = (int(n) for n in record.read_text().split())
    return Peak(mib, private, mapped, done.returncode, done.stdout, done.stderr)
