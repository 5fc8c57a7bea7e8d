"""A scan that read nothing exits 2 with one line saying so, even under --max-rate: an empty
selection, inputs all empty, standard input empty. One line read is enough to pass."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from tests.helpers import run

_EMPTY_GZ = gzip.compress(b"", mtime=0)


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


@pytest.mark.parametrize(("name", "data"), [("zero.log", b""), ("zero.log.gz", _EMPTY_GZ)])
def test_a_scan_of_empty_inputs_never_says_no_failures_were_found(
    tmp_path: Path, name: str, data: bytes
) -> None:
    """The summary of a scan that read no line says that nothing was read, not that no failure
    was found (it said both, the error on standard error and "No Harmony failures found." on
    standard output)."""
    log = tmp_path / name
    log.write_bytes(data)
    result = run(["scan", "-j", "1", str(log)])
    assert result.exit_code == 2
    assert "No Harmony failures found" not in result.stdout + result.stderr
    assert "Nothing was read: every input was empty." in result.stdout


def test_empty_standard_input_is_nothing_read() -> None:
    result = run(["scan", "-j", "1", "-"], b"")
    assert result.exit_code == 2 and "nothing read" in result.stderr


def test_one_line_read_is_a_scan(tmp_path: Path) -> None:
    (tmp_path / "a.log").write_text("INFO fine\n")
    assert run(["scan", "-j", "1", str(tmp_path)]).exit_code == 0
