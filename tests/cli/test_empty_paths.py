"""An empty path names no file, for every command that takes paths: `Path("")` is `.`, so
`scan ""` (an unset `$LOGDIR`) scanned the current folder, `explain ""` read standard input
and `--events ""` failed with a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from harmony_doctor.errors import InputError
from harmony_doctor.inputs.files import discover
from harmony_doctor.inputs.reader import read_input
from tests.helpers import SAMPLES, run

LOG = str(SAMPLES / "vllm-traceback.log")


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["scan", ""], "cannot read '': No such file or directory"),
        (["scan", LOG, ""], "cannot read '': No such file or directory"),
        (["explain", ""], "cannot read '': No such file or directory"),
        (["decode", ""], "cannot read '': No such file or directory"),
        (["recover", ""], "cannot read '': No such file or directory"),
        (["repro", ""], "cannot read '': No such file or directory"),
        (["render", ""], "cannot read '': No such file or directory"),
        (["report", ""], "cannot read '': No such file or directory"),
        (["watch", "", "--textfile", "{tmp}"], "cannot read '': No such file or directory"),
        (["scan", LOG, "--events", ""], "--events '': an empty name names no file"),
        (["scan", LOG, "--summary-csv", ""], "--summary-csv '': an empty name names no file"),
        (["explain", LOG, "--vocab", ""], "--vocab '': an empty name names no file"),
        (["explain", LOG, "--grammar-file", ""], "--grammar-file '': an empty name"),
        (["grammar", "--tools-from", ""], "--tools-from '': an empty name names no file"),
        (["repro", LOG, "--out", ""], "--out '': an empty name names no file"),
    ],
)
def test_an_empty_path_is_one_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], said: str
) -> None:
    monkeypatch.chdir(tmp_path)  # a folder with a failing log in it: `.` would find it
    (tmp_path / "app.log").write_bytes((SAMPLES / "vllm-traceback.log").read_bytes())
    result = run([a.replace("{tmp}", str(tmp_path)) for a in args], stdin=b"<|start|>")
    assert result.exit_code == 2, result
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"harmony-doctor: error: {said}")


def test_the_library_reads_no_empty_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "app.log").write_text("a log\n")
    sources, skipped = discover([""])
    assert sources == []
    assert [(s.label, s.reason) for s in skipped] == [("''", "No such file or directory")]
    with pytest.raises(InputError, match="cannot read '': No such file or directory"):
        read_input("")
