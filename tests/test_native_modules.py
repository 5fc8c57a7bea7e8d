"""The Rust core stays in small modules (the house style: "Rust in small modules"; issue 35): no
file under native/src over 600 lines, the generated fixture included, and no two modules that
use each other (a circle: one of them holds what belongs to the other)."""

from __future__ import annotations

import re
from pathlib import Path

MAX_LINES = 600
SOURCES = Path(__file__).parents[1] / "native" / "src"


def test_no_rust_file_is_over_600_lines() -> None:
    sizes = {p.name: len(p.read_text("utf-8").splitlines()) for p in SOURCES.rglob("*.rs")}
    assert "lib.rs" in sizes  # the tree was found
    over = {name: n for name, n in sizes.items() if n > MAX_LINES}
    assert over == {}, f"split these along their concerns: {over}"


_USES = re.compile(r"\bcrate::(?:\{([^}]*)\}|(\w+))")


def _uses(text: str, modules: set[str]) -> set[str]:
    """The modules of the crate that `text` names (`use crate::a::b`, `crate::{a, b::c}`)."""
    named: set[str] = set()
    code = "\n".join(line.split("//")[0] for line in text.splitlines())  # not what comments say
    for group, single in _USES.findall(code):
        parts = [p.strip().split("::")[0] for p in group.split(",")] if group else [single]
        named.update(p for p in parts if p in modules)
    return named


def test_no_two_rust_modules_use_each_other() -> None:
    # a module's own unit tests (`#[cfg(test)] mod tests`, at its end) may use any module
    files = {p.stem: p.read_text("utf-8").split("#[cfg(test)]")[0] for p in SOURCES.glob("*.rs")}
    graph = {name: _uses(text, set(files)) - {name} for name, text in files.items()}
    assert graph["unwrap"]  # the reading works: unwrap uses the JSON line reader
    circles = sorted((a, b) for a, uses in graph.items() for b in uses if a < b and a in graph[b])
    assert circles == [], f"modules that use each other: {circles}"
