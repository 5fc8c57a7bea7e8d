"""scan/source.py: the core's own thread keeps batches in order and hands its errors back."""

from __future__ import annotations

import io
import threading
from datetime import datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harmony_doctor.harmony.vocab import Vocab
from harmony_doctor.native import use_native
from harmony_doctor.scan import source
from harmony_doctor.scan.core import Batch, IdLine, Meta, Window
from harmony_doctor.scan.reference_core import Core
from harmony_doctor.scan.source import scan_source
from harmony_doctor.scan.threads import CoreThread
from harmony_doctor.streams.clean import CleanStreams


class _Failing(Core):
    """A core that fails on its third chunk (as a bad wrapper line number would)."""

    def __init__(self) -> None:
        super().__init__()
        self.fed = 0

    def feed(self, data: bytes, meta: Meta | None = None, newlines: int | None = None) -> Batch:
        self.fed += 1
        if self.fed == 3:
            raise ValueError("bad meta line")
        return super().feed(data, meta, newlines)


def test_core_thread_batches_come_back_in_order() -> None:
    error = "openai_harmony.HarmonyError: Unknown role: x"
    chunks = [f"INFO line {n}\n{error}\n".encode() + b"filler\n" * 400 for n in range(40)]
    thread = CoreThread(Core())
    windows: list[Window] = []
    try:
        for chunk in chunks:
            thread.submit(chunk, None, chunk.count(b"\n"))
            windows += [w for batch in thread.batches(wait=False) for w in batch.windows]
        windows += [w for batch in thread.batches(wait=True) for w in batch.windows]
    finally:
        thread.close()
    windows += thread.core.finish().windows
    hits = [line for w in windows for line in w.hit_lines]
    assert hits == [2 + 402 * n for n in range(40)]
    assert thread.pending == 0


def test_core_thread_error_reaches_the_feeder_and_the_thread_ends() -> None:
    thread = CoreThread(_Failing())
    with pytest.raises(ValueError, match="bad meta"):
        try:
            for n in range(10):
                thread.submit(b"x\n" * (n + 1), None, n + 1)
                list(thread.batches(wait=False))
            list(thread.batches(wait=True))
        finally:
            thread.close()
    assert thread.thread is not None and not thread.thread.is_alive()
    assert "harmony-doctor-core" not in {t.name for t in threading.enumerate()}


def test_idline_type_is_what_batches_carry() -> None:
    thread = CoreThread(Core())
    try:
        line = b"INFO [logger.py:71] Generated response r: output: '', output_token_ids: [1]\n"
        thread.submit(line, None, line.count(b"\n"))
        batch = next(thread.batches(wait=True))
    finally:
        thread.close()
    assert [type(i) for i in batch.id_lines] == [IdLine]


_GOOD = "200005, 35644, 200008, 1844, 200007, 200006, 173781, 200005, 17196, 200008, 525, 200002"
_GOOD_OTHER_TEXT = (
    "200005, 35644, 200008, 9, 9, 9, 200007, 200006, 173781, 200005, 17196, 200008, 7, 200002"
)
_BAD = "200005, 35644, 200008, 1844, 200007, 12606, 200002"
_LISTS = [f"[{_GOOD}]", f"[{_GOOD_OTHER_TEXT}]", f"[{_BAD}]", "[]", "None", "[200005, 35644"]
_MODES = ["", " (streaming delta)", " (streaming complete)"]
_REASONS = [", finish_reason: stop", ", finish_reason: None", ", finish_reason: length", ""]


def _id_line(n: int, request: int, mode: str, ids: str, reason: str) -> str:
    return (
        f"(APIServer pid=1) INFO 11-01 00:00:{n % 60:02d} [logger.py:71] Generated response "
        f"chatcmpl-{request}{mode}: output: 'x', output_token_ids: {ids}{reason}"
    )


def test_clean_completions_are_counted_not_kept(vocab: Vocab) -> None:
    """Memory grows with the failures, not with the log: a completion the replay finds clean
    is counted as replayed and dropped during the scan; the faulty one is kept."""
    lists = [_GOOD, _BAD, _GOOD, _GOOD]
    lines = [_id_line(n, n, "", f"[{ids}]", ", finish_reason: stop") for n, ids in enumerate(lists)]
    data = ("\n".join(lines) + "\n").encode()
    reference = datetime(2026, 11, 30)
    kept_all = scan_source(io.BytesIO(data), "x.log", reference, True)
    settled = scan_source(
        io.BytesIO(data), "x.log", reference, True, clean=CleanStreams(vocab, "assistant")
    )
    assert sum(kept_all.completed.values()) == sum(settled.completed.values()) == 4
    assert len(kept_all.completions) == 4
    assert [inp.request_id for inp, _ in settled.completions] == ["chatcmpl-1"]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 4),
            st.sampled_from(_MODES),
            st.sampled_from(_LISTS),
            st.sampled_from(_REASONS),
        ),
        min_size=1,
        max_size=25,
    )
)
def test_completions_settled_by_shape_count_as_the_general_path(
    vocab: Vocab, lines: list[tuple[int, str, str, str]]
) -> None:
    """Counting a clean one-line completion from its shape (no tokens built) leaves the same
    replayed count, kept completions (tokens, line, time) and order as the general path, with
    streaming deltas, repeats of a request, empty, cut and faulty lists mixed in."""
    text = "\n".join(_id_line(n, *line) for n, line in enumerate(lines)) + "\n"

    def scan(shapes: bool) -> tuple[object, object]:
        clean = CleanStreams(vocab, "assistant")
        scanner = source._SourceScanner("x.log", datetime(2026, 11, 30), True, clean)
        if not shapes:
            scanner.completions.settle = None
        found = scanner.run([("x.log", lambda: io.BytesIO(text.encode()))])
        kept = [
            (i.request_id, i.tokens, i.notes, h.line, h.timestamp) for i, h in found.completions
        ]
        return found.completed, kept

    fast, general = scan(True), scan(False)
    assert fast == general


def test_clean_one_line_completions_are_settled_by_shape(vocab: Vocab) -> None:
    if not use_native():
        pytest.skip("the Rust extension is not built (or HARMONY_DOCTOR_NATIVE=0)")
    lines = [_id_line(n, n, "", f"[{_GOOD}]", ", finish_reason: stop") for n in range(5)]
    lines.append(_id_line(9, 9, "", f"[{_BAD}]", ", finish_reason: stop"))
    scanner = source._SourceScanner(
        "x.log", datetime(2026, 11, 30), True, CleanStreams(vocab, "assistant")
    )
    settled: list[bool] = []
    shape = scanner.completions._settled_by_shape

    def recorded(*args: Any) -> bool:
        settled.append(shape(*args))
        return settled[-1]

    scanner.completions._settled_by_shape = recorded  # type: ignore[method-assign,assignment]
    found = scanner.run([("x.log", lambda: io.BytesIO(("\n".join(lines) + "\n").encode()))])
    assert settled == [True] * 5 + [False]
    assert sum(found.completed.values()) == 6 and [i.request_id for i, _ in found.completions] == [
        "chatcmpl-9"
    ]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 3000), max_size=6), st.booleans())
def test_a_window_keeps_each_line_to_its_head(lengths: list[int], final_newline: bool) -> None:
    """What `_place` reads of a window line is its first HEAD bytes: that is what is kept, cut
    as the line would be after a split (a window of 2 MiB lines was held, and split, whole)."""
    from harmony_doctor.inputs.timestamps import HEAD

    text = b"\n".join(bytes([97 + n % 26]) * size for n, size in enumerate(lengths))
    text += b"\n" if final_newline else b""
    heads = source._heads(text)
    assert heads == [line[:HEAD] for line in text.split(b"\n")]
    assert all(len(head) <= HEAD for head in heads)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=60).map(lambda b: b.replace(b"\x00", b"\n")), st.integers(0, 8))
def test_a_windows_lines_are_decoded_one_by_one_as_the_whole_would_be(
    text: bytes, skip: int
) -> None:
    """The lines fed are decoded from the window line by line (its whole was decoded, and
    split, first): the same text for any bytes, invalid UTF-8 beside a line end included."""
    skip = min(skip, text.count(b"\n"))
    assert source._decoded(text, skip) == text.decode("utf-8", "replace").split("\n")[skip:]
