"""The Rust core holds no log's wording (issue 35: "no literal of a log's wording in Rust outside
its tests"): the words of the failure forms, the line shapes and the wrappers, stamps and vLLM
completion lines are handed over when a reader is made (faults/catalogue.py, faults/shapes.py,
inputs/log_words.py), so a new word is a Python edit alone; the tests below make readers of
other words and see them read."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harmony_doctor.faults import catalogue
from harmony_doctor.faults.shapes import LINE_SHAPES
from harmony_doctor.inputs import log_words
from harmony_doctor.native import native_module

SOURCES = Path(__file__).parents[1] / "native" / "src"
# generated from the catalogue for the unit tests (tests/test_native_fixture.py), the unit
# tests' own helpers, and a module's unit tests kept in a file of their own (`NAME_tests.rs`)
TEST_ONLY = {"fixture.rs", "testing.rs"}


def _test_only(path: Path) -> bool:
    """A file only unit tests compile: a helper, or a module's tests (`NAME_tests.rs`, which
    NAME.rs includes under `#[cfg(test)]`)."""
    if path.name in TEST_ONLY:
        return True
    if not path.name.endswith("_tests.rs"):
        return False
    owner = path.with_name(path.name.removesuffix("_tests.rs") + ".rs").read_text("utf-8")
    return f'#[cfg(test)]\n#[path = "{path.name}"]\nmod tests;' in owner


_STRING = re.compile(rb'b?"((?:[^"\\]|\\.)*)"')
_CHAR = re.compile(rb"b?'(?:[^'\\]|\\[^']*)'")  # b'"', '\\n', b'\\x1f': no string's quote

native = native_module()
needs_native = pytest.mark.skipif(native is None, reason="the Rust extension is not built")


def _words() -> set[bytes]:
    """Every word of a log the Python side hands the core, 3 bytes or longer."""
    texts: list[str | bytes] = [*catalogue.ERROR_ANCHORS]
    for shape in LINE_SHAPES:
        texts += [*shape.literals, *shape.words]
    for name in dir(log_words):
        value = getattr(log_words, name)
        if name.isupper():
            texts += [value] if isinstance(value, str) else list(value)
    found = {t.encode() if isinstance(t, str) else t for t in texts}
    return {w.strip() for w in found if len(w.strip()) >= 3}


# a literal that is the core's own message (an error, a refusal), not a log's words
_MESSAGE = re.compile(rb"(?:\bErr|format!|\.expect|panic!|\bfail|new_err)\(\s*$")


def _literals(source: str) -> list[bytes]:
    """The string literals of a Rust file's code: not its comments, its own messages or its
    unit tests."""
    code = source.split("#[cfg(test)]\nmod tests")[0]
    lines = [line for line in code.splitlines() if not line.lstrip().startswith("//")]
    text = _CHAR.sub(b"", "\n".join(lines).encode())
    return [
        m.group(1)
        for m in _STRING.finditer(text)
        if not _MESSAGE.search(text[max(0, m.start() - 80) : m.start()])
    ]


def _holds(literal: bytes, word: bytes) -> bool:
    """Whether `word` stands in `literal` as a word (not inside a longer one)."""
    return (
        re.search(rb"(?<![A-Za-z0-9_])" + re.escape(word) + rb"(?![A-Za-z0-9_])", literal)
        is not None
    )


def test_the_words_are_found_where_they_are_written() -> None:
    """The reading below is not idle: it finds the words in the generated fixture."""
    fixture = _literals((SOURCES / "fixture.rs").read_text("utf-8"))
    words = _words()
    assert b"Generated response" in words and b"MESSAGE" in words and b"Jan" in words
    assert any(_holds(literal, w) for literal in fixture for w in words)


def test_no_rust_source_writes_a_word_of_a_log() -> None:
    words = _words()
    found = {
        path.name: sorted(
            {
                w.decode()
                for literal in _literals(path.read_text("utf-8"))
                for w in words
                if _holds(literal, w)
            }
        )
        for path in SOURCES.glob("*.rs")
        if not _test_only(path)
    }
    assert "lib.rs" in found  # the tree was read
    written = {name: hits for name, hits in found.items() if hits}
    assert written == {}, f"hand these over from Python instead: {written}"


@needs_native
def test_the_wrappers_read_the_words_they_are_given() -> None:
    assert native is not None
    words = log_words.wrapper_words()
    line = b"2026-11-01T00:00:00Z stdlog F x\nMai 12 10:41:19 gpu-1 vllm[7]: y\n"
    assert native.Wrappers(**words).unwrap_records(line) is None  # neither is known
    other = native.Wrappers(
        **{**words, "cri_streams": ["stdout", "stdlog"], "months": [*words["months"], "Mai"]}
    )
    assert other.unwrap_records(line) == (b"x\ny\n", (0, 1, 1, 0), [(1, 7, "journal")])
    assert other.chunk_lines(b"plain\nMai 12 10:41:19 h x: y\n") == (2, True)
    assert native.Wrappers(**words).chunk_lines(b"plain\nMai 12 10:41:19 h x: y\n") == (2, False)
    with pytest.raises(ValueError, match="three ASCII letters"):
        native.Wrappers(**{**words, "months": ["Sept"]})


@needs_native
def test_a_completion_line_is_read_with_the_words_it_is_given() -> None:
    assert native is not None
    words = log_words.completion_words()
    line = b"Answered request r1: output_token_ids: [1, 2], finish_reason: stop"
    assert native.Completions(**words).output_line(line, 201_088) is None
    other = native.Completions(**{**words, "generated": "Answered request "})
    read = other.output_line(line, 201_088)
    assert read is not None and (read.request_id, read.ids) == ("r1", (1, 2))


@needs_native
def test_a_core_reads_a_stamp_after_the_level_words_it_is_given() -> None:
    assert native is not None
    line = b"NOTICE 11-27 10:00:01 Received request chatcmpl-1\n"
    shapes = list(LINE_SHAPES)

    def stamps(levels: list[str], pid_key: str) -> dict[tuple[str, int | None, bytes | None], int]:
        core = native.Core(
            list(catalogue.ERROR_ANCHORS), "x", shapes, levels=levels, pid_key=pid_key
        )
        core.feed(line)
        core.finish()
        tallies: dict[tuple[str, int | None, bytes | None], int] = core.stats().tallies
        return tallies

    given = log_words.stamp_words()
    assert stamps(**given) == {("received", None, None): 1}
    noticed = stamps(levels=[*given["levels"], "NOTICE"], pid_key=given["pid_key"])
    assert noticed == {("received", None, b"11-27 10"): 1}
