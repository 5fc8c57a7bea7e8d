"""The Rust core stays in small modules (the house style: "Rust in small modules"; issue 35): no
file under native/src over 600 lines, the generated fixture included."""

from __future__ import annotations

from pathlib import Path

MAX_LINES = 600
SOURCES = Path(__file__).parents[1] / "native" / "src"


def test_no_rust_file_is_over_600_lines() -> None:
    sizes = {p.name: len(p.read_text("utf-8").splitlines()) for p in SOURCES.rglob("*.rs")}
    assert "lib.rs" in sizes  # the tree was found
    over = {name: n for name, n in sizes.items() if n > MAX_LINES}
    assert over == {}, f"split these along their concerns: {over}"
