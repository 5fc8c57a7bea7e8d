"""A large input read whole is held once: read, told apart, and its failures extracted."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

import harmony_doctor as hd
from harmony_doctor.inputs.paste import lines_of

TRACEBACK = Path(__file__).parents[2] / "samples" / "vllm-traceback.log"


@given(st.text(alphabet="ab\n\r \u2028", max_size=60), st.integers(1, 8))
def test_lines_of_is_split(text: str, piece: int) -> None:
    assert list(lines_of(text, piece)) == text.split("\n")


def test_a_large_log_is_explained_holding_about_two_copies(tmp_path: Path) -> None:
    """Before: the chunks, their join and the text (three copies), then a list of every line
    twice over (the paste reader's, the extractor's) and the format check's: five."""
    filler = "".join(
        f'(APIServer pid=3817) INFO:     10.1.4.{i % 250}:{50000 + i} - "POST /v1/chat/'
        'completions HTTP/1.1" 200 OK\n'
        for i in range(120_000)
    )
    log = tmp_path / "big.log"
    log.write_text(filler + TRACEBACK.read_text())
    size = log.stat().st_size
    tracemalloc.start()
    try:
        given_input = hd.read_input(str(log))
        explained = hd.explain_input(given_input)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert isinstance(explained, hd.ExplainedLog)
    assert [e.code for e in explained.explanation.errors] == [
        e.code for e in hd.extract_failures(TRACEBACK.read_text())
    ]
    assert explained.explanation.lines == filler.count("\n") + TRACEBACK.read_text().count("\n")
    assert peak < 2.5 * size, f"peak {peak / size:.2f} times the input"


def test_an_input_is_read_holding_one_copy_of_its_text(tmp_path: Path) -> None:
    """The unwrapped bytes and their decoded text were held whole at once (a 100 MB log: 208 MiB
    to read it); now each chunk is decoded onto the text, which grows in place."""
    log = tmp_path / "big.log"
    line = '(APIServer pid=3817) INFO:     10.1.4.9:50000 - "POST /v1/chat/completions" 200 OK\n'
    log.write_text(line * 200_000)
    size = log.stat().st_size
    tracemalloc.start()
    try:
        read = hd.read_input(str(log))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(read.text) == size
    assert peak < 1.3 * size, f"peak {peak / size:.2f} times the input"


def test_a_character_split_between_chunks_is_read_whole(tmp_path: Path) -> None:
    from harmony_doctor.inputs.files import CHUNK

    text = "a" * (CHUNK - 1) + "é—𝄞 <|start|>\n" + "ü" * CHUNK + "\n"
    path = tmp_path / "split.log"
    path.write_text(text, encoding="utf-8")
    assert hd.read_input(str(path)).text == text
