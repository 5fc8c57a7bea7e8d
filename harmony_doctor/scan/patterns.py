"""Failure patterns: templates that group failures that are the same in substance.

A pattern keeps what tells problems apart and masks what varies: token ids stay for
unexpected tokens (200002 after `<|end|>` and 12606 after `<|call|>` are different problems);
header remainders keep their structure (`to=`, `<|constrain|>`, `<|channel|>`, `json`) while
numbers, quoted strings and free prose are masked.
"""

from __future__ import annotations

import re

from harmony_doctor.harmony.vocab import FIRST_SPECIAL, special_token_name

_SPECIAL_TEXT = re.compile(r"<\|[a-z_0-9]+\|>")
_NUMBER = re.compile(r"^[\[\(]?-?\d+(?:\.\d+)?[\]\),]*$")
_QUOTED = re.compile("^[\"'`\u201c\u2018].*$")  # straight or curly quotes


def token_name(token: int) -> str | None:
    """The name of a special token; None for ordinary text tokens (they need the vocabulary)."""
    return special_token_name(token) if token >= FIRST_SPECIAL else None


def _word_shape(word: str) -> str:
    if word.startswith("to="):
        return "to=<name>"
    if _SPECIAL_TEXT.search(word):
        # Keep the markup, mask the text around it: `<|constrain|>json` stays, `x<|channel|>y`
        # becomes `<w><|channel|><w>`.
        pieces = _SPECIAL_TEXT.split(word)
        marks = _SPECIAL_TEXT.findall(word)
        out = ""
        for index, piece in enumerate(pieces):
            if piece:
                out += piece if piece in ("json", "analysis", "commentary", "final") else "<w>"
            if index < len(marks):
                out += marks[index]
        return out
    if word in ("json", "analysis", "commentary", "final", "assistant", "user", "system"):
        return word
    if _NUMBER.match(word):
        return "<num>"
    if _QUOTED.match(word):
        return "<str>"
    return "<w>"


def remainder_template(remainder: str) -> str:
    """`to=functions.a to=functions.a` -> `to=<name> to=<name>`; prose -> `<prose>`."""
    shapes: list[str] = []
    for word in remainder.split():
        shape = _word_shape(word)
        if shapes and shape in ("<w>", "<num>", "<str>"):
            last = shapes[-1]
            if last in ("<w>", "<words>", "<str>") and shape in ("<w>", "<str>"):
                shapes[-1] = "<words>"
                continue
            if last in ("<num>", "<nums>") and shape == "<num>":
                shapes[-1] = "<nums>"
                continue
        shapes.append(shape)
    template = " ".join(shapes)
    if template in ("<words>", "<w>", "<str>"):
        return "<prose>"
    return template or "<empty>"


def pattern_of(
    kind: str, token: int | None = None, remainder: str | None = None, role: str | None = None
) -> str:
    """The pattern key of one failure."""
    if kind == "unexpected_token" and token is not None:
        name = token_name(token)
        return f"unexpected_token {token} {name}" if name else f"unexpected_token {token}"
    if kind == "header_leftover":
        return f"header_leftover {remainder_template(remainder)}" if remainder else kind
    if kind == "unknown_role" and role is not None:
        shape = _SPECIAL_TEXT.sub(lambda m: m.group(), role)
        doubled = any(role.startswith(r + r) for r in ("assistant", "user", "system"))
        if "<|start|>" in role or doubled:
            return f"unknown_role {shape if len(shape) <= 60 else shape[:60]}"
        return "unknown_role <w>"
    return kind
