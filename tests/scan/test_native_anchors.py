"""The Rust core searches the error anchors Python hands it, and no others of its own."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harmony_doctor.faults.shapes import LINE_SHAPES, LineShape
from harmony_doctor.inputs.log_words import stamp_words
from harmony_doctor.native import native_module
from harmony_doctor.scan.core import ERROR_ANCHORS, MARKUP_LINE, NativeCore
from harmony_doctor.scan.cores import make_core
from harmony_doctor.scan.reference_core import Core
from tests.scan.test_core import PARAMS, chunkings, run

native = native_module()
pytestmark = pytest.mark.skipif(native is None, reason="the Rust extension is not built")

# A list unlike the catalogue's: two of its anchors, a new one, one inside another and one
# holding a structural literal.
OTHER = (b"HarmonyError", b"tool call", b"TEST ANCHOR 7", b"ANCHOR", b"| GET x")
RULE = MARKUP_LINE.decode()
SHAPES = list(LINE_SHAPES)


def test_the_native_core_uses_the_anchors_python_hands_it() -> None:
    assert native is not None
    assert native.Core(list(ERROR_ANCHORS), RULE, SHAPES, **stamp_words()).anchors == list(
        ERROR_ANCHORS
    )
    assert NativeCore()._core.anchors == list(ERROR_ANCHORS)
    assert native.Core(list(OTHER), RULE, SHAPES, **stamp_words()).anchors == list(OTHER)
    assert make_core(native=True)._core.anchors == list(ERROR_ANCHORS)  # type: ignore[attr-defined]
    assert NativeCore()._core.markup_line == RULE


def test_a_line_with_markup_is_a_hit_by_the_rule_python_hands_over() -> None:
    """The catalogue's markup-line rule: a content field, or a header remainder quoted on its
    own (`Some("...`), in both cores alike; another rule changes what is a hit."""
    data = b'x Some("<|constrain|>json")\n"stop": 1 <|call|>\n{"content": "<|x"}\n'
    for core in (Core(before=0, after=0), NativeCore(before=0, after=0)):
        windows, _, _ = run(core, [data])
        assert [w.hit_lines for w in windows] == [(1,), (3,)]
    content_only = MARKUP_LINE.split(b"|(?:Some")[0]  # the content-field rule alone
    for core in (
        Core(before=0, after=0, markup_line=content_only),
        NativeCore(before=0, after=0, markup_line=content_only),
    ):
        windows, _, _ = run(core, [data])
        assert [w.hit_lines for w in windows] == [(3,)]


def test_without_anchors_only_the_structural_rules_remain() -> None:
    data = b'HarmonyError\n{"content": "<|x"}\nReceived request a\n'
    windows, _, stats = run(NativeCore(before=0, after=0, anchors=()), [data])
    assert [w.hit_lines for w in windows] == [(2,)]  # markup with content: not an anchor's
    assert stats.received_lines == 1


@pytest.mark.parametrize("anchors", [[b""], [b"a\nb"], [b"ok", b""]])
def test_both_cores_refuse_anchors_no_line_can_hold_alike(anchors: list[bytes]) -> None:
    with pytest.raises(ValueError, match="error anchor"):
        Core(anchors=anchors)
    with pytest.raises(ValueError, match="error anchor"):
        NativeCore(anchors=anchors)


def test_the_native_core_refuses_anchors_that_are_not_bytes() -> None:
    with pytest.raises(TypeError):
        NativeCore(anchors=["HarmonyError"])  # type: ignore[list-item]


def test_the_native_core_searches_no_anchor_holding_another() -> None:
    """A line holding `nexpected role` holds `xpected`: the longer is not searched, nor the
    second of twins, and both cores find the same hits."""
    anchors = [b"abcd", b"abcd", b"xpected", b"nexpected role", b"role"]
    core = NativeCore(before=0, after=0, anchors=anchors)
    assert core._core.anchors == anchors
    assert core._core.searched_anchors == [b"abcd", b"xpected", b"role"]
    data = b"abcd\nunexpected role\nno rol\nexpected\n"
    want = run(Core(before=0, after=0, anchors=anchors), [data])
    assert [w.hit_lines for w in want[0]] == [(1,), (2,), (4,)]
    assert run(core, [data]) == want


def test_the_catalogue_s_anchors_search_within_teddy_s_limit() -> None:
    """Every catalogue anchor holds one searched, and the searched ones with every line
    shape's literals (the request routes among them: a new shape counts here) are at most the
    64 patterns of aho-corasick's packed searcher (past it the automaton took three times as
    long over a GiB: benchmarks/README.md)."""
    searched = NativeCore()._core.searched_anchors
    assert all(any(s in a for s in searched) for a in ERROR_ANCHORS)
    shape_literals = sum(len(shape.literals) for shape in LINE_SHAPES)
    assert shape_literals >= 8  # ids, received, the access lines' (quoted, gin, request)
    assert len(searched) + shape_literals <= 64


def _fragments(anchors: tuple[bytes, ...]) -> list[bytes]:
    """Every start and end of every anchor (so every piece the Rust core may search for, with
    and without the rest of its anchor), blanks and a stamp."""
    out = [b" ", b"x", b"\t", b"INFO 11-27 10:00:01 ", b'"POST /v1/responses ', b"<|", b"text='"]
    out += [b"request: POST /completion ", b"request: POST /slots "]
    for a in anchors:
        out += [a[:i] for i in range(1, len(a) + 1)] + [a[i:] for i in range(len(a))]
    return out


def _logs(anchors: tuple[bytes, ...]) -> st.SearchStrategy[bytes]:
    line = st.lists(st.sampled_from(_fragments(anchors)), max_size=10).map(b"".join)
    return st.lists(line, max_size=30).map(b"\n".join)


@pytest.mark.parametrize("anchors", [OTHER, (*ERROR_ANCHORS, b"TEST ANCHOR")])
@given(data=st.data(), params=PARAMS)
def test_native_matches_reference_with_other_anchors(
    anchors: tuple[bytes, ...], data: st.DataObject, params: dict[str, Any]
) -> None:
    log = data.draw(_logs(anchors))
    chunks = data.draw(chunkings(log))
    want = run(Core(**params, anchors=anchors), chunks)
    assert run(NativeCore(**params, anchors=anchors), chunks) == want


def test_a_new_anchor_makes_hits_on_both_cores() -> None:
    data = b"INFO 11-27 10:00:01 x\nTEST ANCHOR here\nHarmonyError\n"
    anchors = (*ERROR_ANCHORS, b"TEST ANCHOR")
    for core in (Core, NativeCore):
        windows, _, _ = run(core(before=0, after=0, anchors=anchors), [data])
        assert [w.hit_lines for w in windows] == [(2,), (3,)]
        assert windows[0].stamp_before == b"11-27 10:00:01"
        windows, _, _ = run(core(before=0, after=0, anchors=OTHER[2:]), [data])
        assert [w.hit_lines for w in windows] == [(2,)]


# A request line no catalogue shape has (a made-up server's), one entry.
NEW_SHAPE = LineShape(
    "made_up", "access", (b"[req] POST ",), words=(b"/generate", b"/v2/chat"), then=b" ?"
)
NEW_SHAPE_LOG = (
    b"[req] POST /generate 200\n"  # counted
    b"[req] POST /v2/chat?x=1\n"  # counted
    b"[req] POST /generated\n"  # no: another endpoint
    b"[req] POST /health 200\n"  # no
    b'"POST /v1/chat/completions HTTP/1.1" 200\n'  # counted by the catalogue's shape
    b"Received request r1\n"
)


@pytest.mark.parametrize("make", [Core, NativeCore])
def test_a_new_request_line_shape_is_one_entry(make: Any) -> None:
    """A line shape handed to either core at construction is counted, with no other edit."""
    _, _, stats = run(make(line_shapes=(*LINE_SHAPES, NEW_SHAPE)), [NEW_SHAPE_LOG])
    assert (stats.access_lines, stats.received_lines) == (3, 1)
    _, _, stats = run(make(), [NEW_SHAPE_LOG])
    assert (stats.access_lines, stats.received_lines) == (1, 1)


def test_both_cores_count_lines_of_other_shapes_alike() -> None:
    """Shapes with blanks, no `then`, and a line regex, on both cores."""
    shapes = (
        LineShape("spaced", "ids", (b"ids",), blanks=True, then=b"=:"),
        LineShape("any", "received", (b"got ",)),
        LineShape("whole", "access", (b"GO ",), line=rb"GO [0-9]+$"),
    )
    data = b"ids \t= 1\nids x\ngot it\nGO 12\nGO 1x\ngot GO 7\n"
    want = run(Core(before=0, after=0, line_shapes=shapes), [data])
    assert want[2].access_lines == 2 and want[2].received_lines == 1
    assert [i.line for i in want[1]] == [1]
    assert run(NativeCore(before=0, after=0, line_shapes=shapes), [data]) == want
