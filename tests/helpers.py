"""Running the CLI in-process and checking golden files."""

from __future__ import annotations

import io
import os
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CASES = REPO / "tests" / "cases"
SAMPLES = REPO / "samples"
# CI lays the team's shared folder beside the clone; a user's clone has none, so every test
# that reads it goes through `shared()` or `shared_files()` and skips with its reason.
SHARED = REPO.parent / "shared"


def shared(*parts: str) -> Path:
    """A path under ../shared, or skip the calling test when it is not there."""
    import pytest

    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"../shared is not beside this clone ({path} is absent)")
    return path


def shared_files(*parts: str, pattern: str = "*") -> list[Path]:
    """Files of a ../shared folder for parametrizing; empty when the folder is absent."""
    folder = SHARED.joinpath(*parts)
    return sorted(p for p in folder.glob(pattern) if p.is_file()) if folder.is_dir() else []


@dataclass(frozen=True)
class Result:
    exit_code: int
    stdout: str
    stderr: str


class _Stdin(io.TextIOWrapper):
    def __init__(self, data: bytes, tty: bool) -> None:
        super().__init__(io.BytesIO(data), encoding="utf-8")
        self._tty = tty

    def isatty(self) -> bool:
        return self._tty


def run(args: list[str], stdin: str | bytes | None = None) -> Result:
    """Run `harmony-doctor ARGS` in-process; stdin None means an interactive terminal."""
    from harmony_doctor.cli import app as cli

    data = stdin.encode() if isinstance(stdin, str) else stdin
    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdin, sys.stdout, sys.stderr
    sys.stdin = _Stdin(data or b"", tty=data is None)
    sys.stdout, sys.stderr = out, err
    try:
        cli.main(args)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 0
    else:  # pragma: no cover - main always exits
        code = 0
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved
    return Result(code, out.getvalue(), err.getvalue())


def check_golden(name: str, actual: str) -> None:
    """Compare with tests/cases/NAME.out; `pytest --update-golden` rewrites it."""
    path = CASES / f"{name}.out"
    if os.environ.get("HD_UPDATE_GOLDEN") == "1" or not path.exists():
        path.write_text(actual)
        if os.environ.get("HD_UPDATE_GOLDEN") != "1":
            raise AssertionError(f"golden file {path.name} was missing; written, review it")
        return
    expected = path.read_text()
    assert actual == expected, f"output differs from {path.name} (pytest --update-golden)"


class Trickle:
    """A stream handing out at most `size` bytes per read (as a pipe or a decompressor may):
    the scan's chunks then end anywhere, inside lines and records."""

    def __init__(self, data: bytes, size: int) -> None:
        self.stream = io.BytesIO(data)
        self.size = size

    def read(self, size: int = -1, /) -> bytes:
        return self.stream.read(self.size if size < 0 else min(size, self.size))

    def close(self) -> None:
        pass
