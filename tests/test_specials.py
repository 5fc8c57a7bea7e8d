"""Harmony's structural special tokens are named once (harmony_doctor/specials.py): no other
module writes a regex alternation of three or more of their names, so a reader cannot drift to
a list of its own (four readers once held four lists, each a little different)."""

from __future__ import annotations

import re
from pathlib import Path

from harmony_doctor import specials

PACKAGE = Path(specials.__file__).parent
_ALTERNATION = re.compile(r"\(\?:([a-z_|]+)\)|\(([a-z_|]+)\)")


def _lists_of_names(source: str) -> list[str]:
    found = []
    for m in _ALTERNATION.finditer(source):
        words = (m.group(1) or m.group(2)).split("|")
        if sum(w in specials.NAMES for w in words) >= 3:
            found.append(m.group(0))
    return found


def test_the_check_sees_a_list_of_names() -> None:
    assert _lists_of_names(r'X = r"<\|(?:end|call|return)\|>"') == ["(?:end|call|return)"]
    assert _lists_of_names(r'X = r"<\|(start|message|end)\|>"') == ["(start|message|end)"]
    assert _lists_of_names(r'X = r"<\|(?:start|channel)\|>"') == []


def test_no_module_but_specials_lists_the_special_tokens() -> None:
    listed = {
        str(path.relative_to(PACKAGE)): found
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name != "specials.py"
        and (found := _lists_of_names(path.read_text(encoding="utf-8")))
    }
    assert listed == {}


def test_the_regexes_match_each_token_and_no_other_family_s() -> None:
    any_ = re.compile(specials.ANY)
    for name in specials.NAMES:
        assert any_.fullmatch(f"<|{name}|>")
    for other in ("<|im_start|>", "<|endoftext|>", "<|channel>", "<|python_tag|>"):
        assert not any_.search(other)
    assert re.fullmatch(specials.STOP, "<|call|>") and not re.search(specials.STOP, "<|start|>")
    assert re.fullmatch(specials.HEADER, "<|message|>") and not re.search(
        specials.HEADER, "<|end|>"
    )
