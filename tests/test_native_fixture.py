"""The Rust unit tests' catalogue (native/src/fixture.rs) is the Python catalogue's, written
out: a test fails when the two differ; `pytest --update-golden` rewrites the file."""

from __future__ import annotations

import os
from pathlib import Path

from harmony_doctor.faults import catalogue
from harmony_doctor.faults.shapes import LINE_SHAPES, LineShape

FIXTURE = Path(__file__).parents[1] / "native" / "src" / "fixture.rs"


def _bytes(b: bytes) -> str:
    return (
        'b"'
        + "".join(chr(c) if 32 <= c < 127 and c not in b'"\\' else f"\\x{c:02x}" for c in b)
        + '"'
    )


def _str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _shape(shape: LineShape) -> str:
    literals = ", ".join(f"{_bytes(lit)}.to_vec()" for lit in shape.literals)
    words = ", ".join(f"{_bytes(w)}.to_vec()" for w in shape.words)
    line = "None" if shape.line is None else f"Some({_str(shape.line.decode())}.into())"
    return (
        "        Shape {\n"
        f"            counts: Counts::{shape.counts.capitalize()},\n"
        f"            literals: vec![{literals}],\n"
        f"            words: vec![{words}],\n"
        f"            blanks: {str(shape.blanks).lower()},\n"
        f"            then: {_bytes(shape.then)}.to_vec(),\n"
        f"            line: {line},\n"
        "        },\n"
    )


def rust_fixture() -> str:
    """native/src/fixture.rs as the catalogue makes it."""
    anchors = "".join(f"    {_bytes(a)},\n" for a in catalogue.ERROR_ANCHORS)
    return (
        "//! The Python catalogue the unit tests hand the core (harmony_doctor/faults/), written\n"
        "//! out by tests/test_native_fixture.py: `pytest --update-golden` rewrites this file and\n"
        "//! a test fails while it differs from the catalogue. Not the crate's: tests only.\n"
        "\n"
        "use std::sync::LazyLock;\n"
        "\n"
        "use crate::anchors::{Counts, Shape};\n"
        "\n"
        "/// The error anchors (`catalogue.ERROR_ANCHORS`).\n"
        f"pub(crate) const ANCHORS: &[&[u8]] = &[\n{anchors}];\n"
        "\n"
        "/// The markup-line rule (`catalogue.MARKUP_LINE`).\n"
        f"pub(crate) const MARKUP_LINE: &str = {_str(catalogue.MARKUP_LINE.decode())};\n"
        "\n"
        "/// The line shapes (`shapes.LINE_SHAPES`).\n"
        "pub(crate) static SHAPES: LazyLock<Vec<Shape>> = LazyLock::new(|| {\n"
        "    vec![\n" + "".join(map(_shape, LINE_SHAPES)) + "    ]\n"
        "});\n"
        "\n"
        "/// Each line shape as the regex the Python core searches a candidate line with.\n"
        "pub(crate) const SHAPE_REGEXES: &[&str] = &[\n"
        + "".join(f"    {_str(shape.regex().decode())},\n" for shape in LINE_SHAPES)
        + "];\n"
    )


def test_the_rust_tests_read_the_catalogue() -> None:
    want = rust_fixture()
    if os.environ.get("HD_UPDATE_GOLDEN") == "1":
        FIXTURE.write_text(want)
    assert FIXTURE.read_text() == want, "native/src/fixture.rs is stale (pytest --update-golden)"
