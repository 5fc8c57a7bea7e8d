"""The Rust unit tests' catalogue (native/src/fixture.rs) is the Python catalogue's, written
out: a test fails when the two differ; `pytest --update-golden` rewrites the file."""

from __future__ import annotations

import os
from pathlib import Path

from harmony_doctor.faults import catalogue

FIXTURE = Path(__file__).parents[1] / "native" / "src" / "fixture.rs"


def _bytes(b: bytes) -> str:
    return (
        'b"'
        + "".join(chr(c) if 32 <= c < 127 and c not in b'"\\' else f"\\x{c:02x}" for c in b)
        + '"'
    )


def _str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def rust_fixture() -> str:
    """native/src/fixture.rs as the catalogue makes it."""
    anchors = "".join(f"    {_bytes(a)},\n" for a in catalogue.ERROR_ANCHORS)
    return (
        "//! The Python catalogue the unit tests hand the core (harmony_doctor/faults/), written\n"
        "//! out by tests/test_native_fixture.py: `pytest --update-golden` rewrites this file and\n"
        "//! a test fails while it differs from the catalogue. Not the crate's: tests only.\n"
        "\n"
        "/// The error anchors (`catalogue.ERROR_ANCHORS`).\n"
        f"pub(crate) const ANCHORS: &[&[u8]] = &[\n{anchors}];\n"
        "\n"
        "/// The markup-line rule (`catalogue.MARKUP_LINE`).\n"
        f"pub(crate) const MARKUP_LINE: &str = {_str(catalogue.MARKUP_LINE.decode())};\n"
    )


def test_the_rust_tests_read_the_catalogue() -> None:
    want = rust_fixture()
    if os.environ.get("HD_UPDATE_GOLDEN") == "1":
        FIXTURE.write_text(want)
    assert FIXTURE.read_text() == want, "native/src/fixture.rs is stale (pytest --update-golden)"
