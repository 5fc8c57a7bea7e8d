"""Golden files for what people see: tests/cases/NAME.cmd (args) + NAME.in (stdin) -> NAME.out."""

from __future__ import annotations

import re
import shlex

import pytest

from harmony_doctor.native import use_native
from tests.helpers import CASES, check_golden, run

CASE_NAMES = sorted(p.stem for p in CASES.glob("*.cmd"))
# The one thing a golden may show that only the Rust core has: lines it declined to Python.
_RUST_FACT = re.compile(r'"rust_declined": [1-9]')


@pytest.mark.parametrize("name", CASE_NAMES)
def test_golden(name: str) -> None:
    if not use_native() and _RUST_FACT.search((CASES / f"{name}.out").read_text()):
        pytest.skip("shows lines the Rust core declined (rust_declined): a fact of that core")
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


HOSTILE = [n for n in CASE_NAMES if "hostile" in n]
# Invisible or terminal-controlling characters that untrusted text carries in these cases.
RAW_CONTROLS = ("\x1b", "\x00", "\x07", "\u202e", "\u202c")


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_text_is_shown_never_obeyed(name: str) -> None:
    """Markup, emoji codes, ANSI/OSC escapes, bidi overrides and NULs from logs and tokens
    reach the terminal as visible text: no raw control byte, no interpreted markup."""
    shown = (CASES / f"{name}.out").read_text()
    assert not [c for c in RAW_CONTROLS if c in shown]
    if not name.endswith(("-table", "scan-hostile")):  # a table splits them into tokens
        assert "[bold]" in shown and ":warning:" in shown
    if name != "scan-hostile":  # scan groups by pattern: the text itself is abstracted away
        assert "x1b" in shown or "\\u{1b}" in shown or "\\x00" in shown


def test_hostile_cases_cover_every_command() -> None:
    commands = {(CASES / f"{n}.cmd").read_text().split()[0] for n in HOSTILE}
    assert commands >= {"explain", "decode", "scan", "rules", "recover", "render"}
