"""A scan that read nothing exits 2 with one line saying so, even under --max-rate: an empty
selection, inputs all empty, standard input empty. One line read is enough to pass."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import run


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["{tmp}/empty"], "nothing to read: no file in"),
        (["--glob", "nomatch*", "{tmp}/logs"], "nothing to read: no file in"),
        (["--exclude", "*", "{tmp}/logs"], "nothing to read: no file in"),
        (["{tmp}/zero.log"], "nothing read: every input was empty"),
        (["--max-rate", "0.01", "{tmp}/zero.log"], "nothing read: every input was empty"),
    ],
)
def test_a_scan_that_read_nothing_fails(tmp_path: Path, args: list[str], said: str) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "a.log").write_text("INFO fine\n")
    (tmp_path / "zero.log").write_text("")
    result = run(["scan", "-j", "1", *(a.format(tmp=tmp_path) for a in args)])
    assert result.exit_code == 2
    assert said in result.stderr and len(result.stderr.splitlines()) == 1


def test_empty_standard_input_is_nothing_read() -> None:
    result = run(["scan", "-j", "1", "-"], b"")
    assert result.exit_code == 2 and "nothing read" in result.stderr


def test_one_line_read_is_a_scan(tmp_path: Path) -> None:
    (tmp_path / "a.log").write_text("INFO fine\n")
    assert run(["scan", "-j", "1", str(tmp_path)]).exit_code == 0
