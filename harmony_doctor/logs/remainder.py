"""A header remainder as logs write it, read: one level of backslash escapes undone, Rust
Debug strings and lists (`Some("...")`, `["a", "b"]`) read into logs/words.py's window, and a
plain line's trailing wrapper punctuation dropped."""

from __future__ import annotations

import re

from harmony_doctor.lazy_regex import Pattern
from harmony_doctor.logs.words import MAX_WORD, Remainder, Words, cut_word

_PAIRS = {")": "(", "]": "[", "}": "{"}


def strip_unbalanced(value: str) -> str:
    """Drop the quotes, brackets and commas a plain line's wrapper left after the message, and
    the full stop of a sentence that put it in brackets (`... (harmony parser: no mapping
    found).`). Only brackets: a quote's balance is not known from the rest of a line alone."""
    value = value.rstrip()
    while value:
        if value[-1] in ".:" and value[-2:-1] in _PAIRS and _unbalanced(value[:-1]):
            value = value[:-1]  # a sentence's stop after the bracket it closes
        if not _unbalanced(value):
            break
        value = value[:-1].rstrip()
    return value


def _unbalanced(value: str) -> bool:
    """Whether `value` ends with a bracket or quote it did not open, a comma or a semicolon."""
    last = value[-1]
    if last in _PAIRS:
        return value.count(last) > value.count(_PAIRS[last])
    if last in "\"'":
        return value.count(last) % 2 == 1
    return last in ",;"


_ESCAPE = Pattern(r"\\(u\{[0-9a-fA-F]{1,6}\}|u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2}|.)", re.S)
_SIMPLE_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", '"': '"', "'": "'", "\\": "\\"}


def _unescape_match(match: re.Match[str]) -> str:
    code = match.group(1)
    if code in _SIMPLE_ESCAPES:
        return _SIMPLE_ESCAPES[code]
    if code == "/":
        return "/"
    if code[0] in "ux" and len(code) > 1:
        digits = code[1:].strip("{}")
        value = int(digits, 16)
        if value <= 0x10FFFF:
            return chr(value)
    return match.group(0)


def unescape(text: str) -> str:
    """One level of backslash escapes (JSON, Python repr, Rust Debug) undone."""
    return _ESCAPE.sub(_unescape_match, text) if "\\" in text else text


def parse_remainder(rest: str) -> tuple[Remainder, int]:
    """The leftover words after `...message header`, and how much of `rest` they used."""
    index = 0
    while index < len(rest) and rest[index] in " \t\n:":
        index += 1
    if index >= len(rest):
        form_open = rest.strip() == ":"
        return Remainder((), not form_open, "absent"), len(rest.rstrip())
    if rest.startswith("Some(", index):
        inner = index + 5
        while inner < len(rest) and rest[inner].isspace():
            inner += 1
        if inner >= len(rest) or rest[inner] != '"':
            return Remainder((), False, "some"), len(rest)
        value, closed, after = _rust_string(rest, inner + 1)
        closed = closed and rest.startswith(")", after)
        words = Words().split(value)
        return words.remainder(closed, "some"), after + (1 if closed else 0)
    if rest.startswith("[", index):
        return _parse_list(rest, index)
    if rest.startswith("None", index):
        return Remainder((), True, "none"), index + 4
    words = Words().split(strip_unbalanced(rest[index:]))
    return words.remainder(True, "text"), len(rest)


def _parse_list(text: str, index: int) -> tuple[Remainder, int]:
    """A Rust Debug list of strings `["a", "b"]` from `text[index] == "["`."""
    words = Words()
    index += 1
    while True:
        while index < len(text) and text[index] in " \t\r\n,":
            index += 1
        if index >= len(text):
            return words.remainder(False, "list"), index
        char = text[index]
        if char == "]":
            return words.remainder(True, "list"), index + 1
        if char != '"':  # an elision or damage: the rest is unknown
            return words.remainder(False, "list"), index
        word, closed, index = _list_word(text, index + 1)
        if word:
            words.add(word)
        if not closed:
            return words.remainder(False, "list"), index


def _list_word(text: str, index: int) -> tuple[str, bool, int]:
    """`_rust_string`, a value past MAX_WORD characters with no escape held as its ends (what
    `Words.add` keeps of it) without a copy of its middle."""
    quote = text.find('"', index)
    stop = len(text) if quote < 0 else quote
    if stop - index <= MAX_WORD or text.find("\\", index, stop) >= 0:
        return _rust_string(text, index)
    return cut_word(text, index, stop), quote >= 0, stop + 1 if quote >= 0 else stop


def _rust_string(text: str, index: int) -> tuple[str, bool, int]:
    """A Rust Debug string body from just after its opening quote: (value, closed, next).

    Copies the runs between escapes whole; `_rust_string_reference`, a character at a time,
    is what it is tested equal to."""
    out: list[str] = []
    while True:
        quote = text.find('"', index)
        slash = text.find("\\", index, len(text) if quote < 0 else quote)
        if slash < 0 or slash + 1 == len(text):  # no escape before the end (or a lone `\`)
            if quote < 0:
                out.append(text[index:])
                return "".join(out), False, max(index, len(text))
            out.append(text[index:quote])
            return "".join(out), True, quote + 1
        out.append(text[index:slash])
        escape = _ESCAPE.match(text, slash)
        assert escape is not None  # `.` (DOTALL) takes whatever follows the backslash
        out.append(_unescape_match(escape))
        index = escape.end()


def _rust_string_reference(text: str, index: int) -> tuple[str, bool, int]:
    """`_rust_string` a character at a time, as first written."""
    out: list[str] = []
    while index < len(text):
        char = text[index]
        if char == '"':
            return "".join(out), True, index + 1
        if char == "\\" and index + 1 < len(text):
            escape = _ESCAPE.match(text, index)
            if escape is not None:
                out.append(_unescape_match(escape))
                index = escape.end()
                continue
        out.append(char)
        index += 1
    return "".join(out), False, index
