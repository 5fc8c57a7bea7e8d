"""The Rust extension (harmony_doctor._native), when built and allowed, and the byte questions
it answers for every chunk read: the Python code here is the reference and the fallback."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from functools import cache
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:  # the extension's records, for the package's annotations
    from harmony_doctor._native import Anatomy as Anatomy
    from harmony_doctor._native import Batch as Batch
    from harmony_doctor._native import Completions as Completions
    from harmony_doctor._native import Core as Core
    from harmony_doctor._native import FormFound as FormFound
    from harmony_doctor._native import Hits as Hits
    from harmony_doctor._native import OutputKey as OutputKey
    from harmony_doctor._native import OutputLine as OutputLine
    from harmony_doctor._native import Wrappers as Wrappers
    from harmony_doctor.faults.shapes import LineShape

_Line = TypeVar("_Line")

NATIVE_ENV = "HARMONY_DOCTOR_NATIVE"  # "0": use the pure-Python code even when Rust is built


# This module is the extension's one face: the rest of the package calls the functions below
# (typed by harmony_doctor/_native.pyi) and never imports `_native` itself. The import graph
# sees `from harmony_doctor import _native` as an import of the package (the extension has no
# .py file), so pyproject's layer contract ignores that one edge, from here only.


@cache
def native_module() -> ModuleType | None:
    """The Rust extension if it is built (whatever HARMONY_DOCTOR_NATIVE says), else None."""
    try:
        from harmony_doctor import _native
    except ImportError:
        return None
    return _native


def native_available() -> bool:
    """Whether the Rust extension is built (whatever HARMONY_DOCTOR_NATIVE says)."""
    return native_module() is not None


def use_native() -> bool:
    """Whether this process runs on the Rust code: built, and not turned off by
    HARMONY_DOCTOR_NATIVE=0."""
    return os.environ.get(NATIVE_ENV, "").strip() != "0" and native_available()


def core_name() -> str:
    """`native` or `python`: the scan core this process uses (shown by --version)."""
    return "native" if use_native() else "python"


def native_for(choice: bool | None = None) -> bool:
    """Whether a caller may use the Rust extension: `choice` when the caller decided once (True:
    if built), else `use_native()`, which reads the environment at every call."""
    allowed = use_native() if choice is None else choice
    return allowed and native_available()


def new_core(
    anchors: Sequence[bytes],
    markup_line: str,
    shapes: Sequence[LineShape],
    before: int,
    after: int,
    max_line: int,
    max_window: int,
    ids: bool,
) -> Core:
    """The Rust scan core (ImportError when the extension is not built)."""
    if native_module() is None:
        raise ImportError("harmony_doctor._native is not built (see README: Building)")
    from harmony_doctor import _native
    from harmony_doctor.inputs.log_words import stamp_words  # here: --version loads no reader

    return _native.Core(
        list(anchors),
        markup_line,
        list(shapes),
        before,
        after,
        max_line,
        max_window,
        ids,
        **stamp_words(),
    )


def new_anatomy(
    fallback: Callable[[int, str], _Line], line: type[_Line], **patterns: Any
) -> Anatomy[_Line]:
    """The Rust line anatomy made of harmony_doctor/logs/lines.py's patterns (see its
    `_native_anatomy`), handing what it declines to `fallback`; ImportError when the extension
    is not built, ValueError when a pattern has no exact translation."""
    if native_module() is None:
        raise ImportError("harmony_doctor._native is not built (see README: Building)")
    from harmony_doctor import _native

    return _native.Anatomy(fallback=fallback, line=line, **patterns)


def new_hits(*, patterns: Sequence[str], ranks: Sequence[int]) -> Hits:
    """The Rust search for the catalogue's message forms, made of their patterns (see
    harmony_doctor/logs/messages.py `native_hits`); `ranks`: per pattern, its form's rank
    (faults/form.py: a higher one gives way to any lower one matching). ImportError when the
    extension is not built, ValueError when a pattern has no translation, exact or loose."""
    if native_module() is None:
        raise ImportError("harmony_doctor._native is not built (see README: Building)")
    from harmony_doctor import _native

    return _native.Hits(patterns=list(patterns), ranks=list(ranks))


# The extension's functions called once per logged completion, bound at their first call: a
# `from harmony_doctor import _native` in the call cost about 0.5 us each time.
_output_line: Callable[[bytes, int], OutputLine | None] | None = None
_output_key: Callable[[bytes, int, int, int], OutputKey | None] | None = None
_clean_key: Callable[[Sequence[int], int, int], tuple[int, ...]] | None = None


@cache
def _completions() -> Completions:
    """The Rust reader of vLLM's `Generated response` lines, made of their words."""
    from harmony_doctor import _native
    from harmony_doctor.inputs.log_words import completion_words

    return _native.Completions(**completion_words())


@cache
def _wrappers() -> Wrappers:
    """The Rust reader of wrapped lines, made of the wrappers' words."""
    from harmony_doctor import _native
    from harmony_doctor.inputs.log_words import wrapper_words

    return _native.Wrappers(**wrapper_words())


def vllm_output_line(line: bytes, vocab_size: int) -> OutputLine | None:
    """The Rust reading of a vLLM `Generated response` line (the extension must be built)."""
    global _output_line
    if _output_line is None:
        _output_line = _completions().output_line
    return _output_line(line, vocab_size)


def vllm_output_key(
    line: bytes, vocab_size: int, first_special: int, message: int
) -> OutputKey | None:
    """The Rust reading of a one-line completion, as far as its clean key (built extension)."""
    global _output_key
    if _output_key is None:
        _output_key = _completions().output_key
    return _output_key(line, vocab_size, first_special, message)


def clean_key(tokens: Sequence[int], first_special: int, message: int) -> tuple[int, ...]:
    """The Rust clean key of a stream (the extension must be built)."""
    global _clean_key
    if _clean_key is None:
        from harmony_doctor import _native

        _clean_key = _native.clean_key
    return _clean_key(tokens, first_special, message)


# A line that may be wrapped starts like one of these; chunks without any pass through whole.
# Searched as "a newline, then a start" (a literal first byte the regex engine skips to) plus a
# match at the chunk's start: a multiline `^` would be tried at every byte.
@cache
def _candidate_starts() -> tuple[re.Pattern[bytes], re.Pattern[bytes]]:
    """The starts of a line that may be wrapped, at a text's start and after a newline."""
    from harmony_doctor.inputs.log_words import MONTHS, either

    months = either(MONTHS).encode()
    start = rb"(?:\{|\d{4}-\d\d-\d\dT|(?:" + months + rb") [ \d]\d \d\d:|-- )"
    return re.compile(start), re.compile(rb"\n" + start)


def chunk_lines(data: bytes) -> tuple[int, bool]:
    """The newlines in `data`, and whether a line that starts after one of them and ends at a
    later one starts like a wrapped one (a Docker/CRI JSON record, an ISO or syslog stamp, a
    journald note): one pass over the chunk. The line after the last newline may be cut by the
    chunk's end and is not looked at (ask `starts_like_wrapped` once it is whole); nor is the
    first line, which may have begun in the chunk before."""
    if native_for():
        return _wrappers().chunk_lines(data)
    return chunk_lines_reference(data)


def chunk_lines_reference(data: bytes) -> tuple[int, bool]:
    """`chunk_lines` in Python (the Rust version is tested equal to it)."""
    last = data.rfind(b"\n")
    wrapped = last > 0 and _candidate_starts()[1].search(data, 0, last) is not None
    return data.count(b"\n"), wrapped


def unwrap_records(
    body: bytes,
) -> tuple[bytes, tuple[int, int, int, int], list[tuple[int, int, str]]] | None:
    """Whole lines that are all complete records in their writers' shapes (Docker json-file,
    CRI, journald `-o short`/`short-iso`/`-o json`, and the JSON of Vector, Promtail or Fluent
    Bit), one inner line each, unwrapped in Rust: (their text, (Docker, CRI, journal and JSON
    records), [(line of the chunk from 0, the wrapper's pid, its name)] for the lines that
    name no pid themselves); None when the Rust extension is not used or declines, and Python
    reads the lines one by one (the reference: `Unwrapper._lines_into`, tested equal)."""
    if not native_for():
        return None
    return _wrappers().unwrap_records(body)


def starts_like_wrapped(line: bytes) -> bool:
    """Whether `line` (a whole line, or whole lines) starts like a wrapped one."""
    return _candidate_starts()[0].match(line) is not None


def _mallopt() -> Callable[[int, int], object] | None:
    """glibc's mallopt: the extension's binding when built (ctypes alone costs 2 ms of a scan's
    start), else through ctypes; None elsewhere than Linux or without it."""
    import sys

    if not sys.platform.startswith("linux"):
        return None
    native = native_module()
    if native is not None:
        binding: Callable[[int, int], object] = native.mallopt
        return binding
    import ctypes

    try:
        function = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return None
    function.argtypes, function.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return function


# glibc's mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3


@cache
def reuse_large_buffers() -> bool:
    """Ask glibc to serve the 1 MiB chunks a scan reads from the heap, not from fresh mmaps.

    Every chunk read and every slice of one is a new buffer; above glibc's default threshold
    (128 KiB) each comes from mmap and is zero-filled page by page when first touched, which
    cost a whole-file scan more system time than the reading itself (0.7 s per GiB). From the
    heap, freed chunks are reused. Memory stays bounded (only a few chunks live at a time).
    Returns whether the setting took; elsewhere than glibc (musl, macOS) nothing happens.
    """
    mallopt = _mallopt()
    if mallopt is None:
        return False
    # Buffers under 2 MiB (the chunks and their slices) come from the heap and are reused;
    # larger ones (a long line's copies) are mmapped and given back when freed, and the heap is
    # trimmed past 8 MiB free at its top. It was every buffer under 32 MiB from the heap,
    # trimmed past 64 MiB: what a window of long lines had freed stayed resident while polars
    # summed up (216 MiB where 169 are needed).
    return bool(mallopt(_M_MMAP_THRESHOLD, 2 << 20)) and bool(mallopt(_M_TRIM_THRESHOLD, 8 << 20))
