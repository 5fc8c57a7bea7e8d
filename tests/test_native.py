"""The Rust answers to the per-chunk byte questions equal the Python reference."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harmony_doctor import native as accel  # the switch and its byte questions
from harmony_doctor.inputs.log_words import wrapper_words

native = accel.native_module()
needs_native = pytest.mark.skipif(native is None, reason="the Rust extension is not built")
# the Rust reader of wrapped lines, made of the wrappers' words as the package makes it
wrapped = None if native is None else native.Wrappers(**wrapper_words())

# Pieces that make up lines near (and not quite) each wrapper's start.
PIECES = [
    b"\n",
    b"{",
    b"-- ",
    b"--",
    b"-",
    b"2026-11-28T",
    b"2026-11-28 ",
    b"2026",
    b"Nov 12 10:",
    b"Nov  2 10:41",
    b"Nov 1",
    b"Dec 31 23",
    b"Jun",
    b" ",
    b"x",
    b"7",
    b"INFO 11-01 00:00:00 ",
]
chunks = st.lists(st.sampled_from(PIECES), max_size=30).map(b"".join) | st.binary(max_size=200)


@needs_native
@settings(max_examples=2000, deadline=None)
@given(chunks)
def test_native_chunk_answers_equal_the_reference(data: bytes) -> None:
    assert wrapped is not None
    assert wrapped.chunk_lines(data) == accel.chunk_lines_reference(data)
    assert wrapped.chunk_lines(data)[0] == data.count(b"\n")


def test_python_fallback_when_native_is_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(accel.NATIVE_ENV, "0")
    assert not accel.use_native()
    assert accel.chunk_lines(b"a\nb\n") == (2, False)
    assert accel.chunk_lines(b"plain\nNov 12 10:41:19 host x[1]: y\n") == (2, True)
    assert accel.chunk_lines(b"plain\n(APIServer pid=1) INFO x\n") == (2, False)
    # the line after the last newline may be cut: only whole lines are looked at
    assert accel.chunk_lines(b"plain\nNov 12 10:41:19 host x[1]: y") == (1, False)
    assert accel.starts_like_wrapped(b'{"log":"x"}\n')
    assert not accel.starts_like_wrapped(b"plain\n{\n")


@needs_native
def test_the_stub_types_the_extension() -> None:
    """harmony_doctor/_native.pyi names every function, class and field of the built extension,
    with its parameters and defaults (mypy's stubtest compares them)."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    args = ["--mypy-config-file", str(root / "pyproject.toml"), "harmony_doctor._native"]
    done = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", *args],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
