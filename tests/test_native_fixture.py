"""The Rust unit tests' catalogue (native/src/fixture.rs) is the Python catalogue's, written
out: a test fails when the two differ; `pytest --update-golden` rewrites the file."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from harmony_doctor.faults import catalogue
from harmony_doctor.faults.shapes import LINE_SHAPES, LineShape
from harmony_doctor.inputs.log_words import (
    LEVELS,
    MONTHS,
    PID_KEY,
    completion_words,
    wrapper_words,
)

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


def _words(words: Mapping[str, object]) -> str:
    """A Rust struct literal's fields: each word a `&str`, each list a `&[String]`."""

    def value(v: object) -> str:
        if isinstance(v, str):
            return _str(v)
        assert isinstance(v, list)
        return "&[" + ", ".join(map(_str, v)) + "].map(String::from)"

    return "".join(f"        {name}: {value(v)},\n" for name, v in words.items())


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
        "\n"
        "/// The level words a vLLM stamp may follow, the key a pid follows (`log_words`).\n"
        "pub(crate) const LEVELS: &[&str] = &[" + ", ".join(map(_str, LEVELS)) + "];\n"
        f"pub(crate) const PID_KEY: &str = {_str(PID_KEY)};\n"
        "\n"
        "/// A stamp's words, as the cores of the tests share them.\n"
        "pub(crate) static STAMPS: LazyLock<std::sync::Arc<crate::stamps::StampWords>> =\n"
        '    LazyLock::new(|| std::sync::Arc::new(crate::stamps::StampWords::new(LEVELS, PID_KEY).expect("a stamp\'s words")));\n'
        "\n"
        "/// A syslog stamp's months (`log_words.MONTHS`).\n"
        "pub(crate) const MONTHS: &[&str] = &[" + ", ".join(map(_str, MONTHS)) + "];\n"
        "\n"
        "/// The wrappers' words (`log_words.wrapper_words()`).\n"
        "pub(crate) static WRAPPERS: LazyLock<crate::wrapper_words::Words> = LazyLock::new(|| {\n"
        "    crate::wrapper_words::Words::new(&crate::wrapper_words::WordList {\n"
        + _words(wrapper_words())
        + "    })\n"
        '    .expect("the wrappers\' words")\n'
        "});\n"
        "\n"
        "/// A `Generated response` line's words (`log_words.completion_words()`).\n"
        "pub(crate) static COMPLETIONS: LazyLock<crate::vllm::Words> = LazyLock::new(|| {\n"
        "    let w = CompletionWords {\n" + _words(completion_words()) + "    };\n"
        "    crate::vllm::Words::new(w.generated, w.output_key, w.finish_key, w.modes, w.no_ids, w.no_reasons)\n"
        '        .expect("a completion line\'s words")\n'
        "});\n"
        "\n"
        "struct CompletionWords<'a> {\n"
        "    generated: &'a str,\n"
        "    output_key: &'a str,\n"
        "    finish_key: &'a str,\n"
        "    modes: &'a [String],\n"
        "    no_ids: &'a str,\n"
        "    no_reasons: &'a [String],\n"
        "}\n"
    )


def test_the_rust_tests_read_the_catalogue() -> None:
    want = rust_fixture()
    if os.environ.get("HD_UPDATE_GOLDEN") == "1":
        FIXTURE.write_text(want)
    assert FIXTURE.read_text() == want, "native/src/fixture.rs is stale (pytest --update-golden)"
