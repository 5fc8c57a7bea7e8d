"""Golden files for what people see: tests/cases/NAME.cmd (args) + NAME.in (stdin) -> NAME.out."""

from __future__ import annotations

import shlex

import pytest

from tests.helpers import CASES, check_golden, run

CASE_NAMES = sorted(p.stem for p in CASES.glob("*.cmd"))


@pytest.mark.parametrize("name", CASE_NAMES)
def test_golden(name: str) -> None:
    args = shlex.split((CASES / f"{name}.cmd").read_text())
    stdin_path = CASES / f"{name}.in"
    stdin = stdin_path.read_bytes() if stdin_path.exists() else b""
    result = run(args, stdin)
    shown = result.stdout
    if result.stderr:
        shown += f"--- stderr ---\n{result.stderr}"
    shown += f"--- exit {result.exit_code} ---\n"
    check_golden(name, shown)


def test_every_case_has_golden_output() -> None:
    assert CASE_NAMES, "no golden cases found"
    missing = [n for n in CASE_NAMES if not (CASES / f"{n}.out").exists()]
    assert not missing
