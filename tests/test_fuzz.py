"""Property tests of every core entry point with hostile input: never an unexpected exception.

Bad input may raise InputError (the CLI's one-line exit 2) and nothing else. The default
profile is fast; HYPOTHESIS_PROFILE=deep runs many more examples (see tests/conftest.py).
"""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
from datetime import datetime
from pathlib import Path

import polars as pl
from hypothesis import given
from hypothesis import strategies as st

from harmony_doctor import logs
from harmony_doctor.choices import INPUT_FORMATS
from harmony_doctor.errors import InputError
from harmony_doctor.harmony.vocab import VOCAB_SIZE, Vocab, load_vocab
from harmony_doctor.inputs.files import Source
from harmony_doctor.inputs.tokens import parse_tokens
from harmony_doctor.models import LogError
from harmony_doctor.output import tables as export
from harmony_doctor.output.escape import visible
from harmony_doctor.scan import event_files as reading
from harmony_doctor.scan import run as scanning
from harmony_doctor.scan.read_status import LATIN1
from harmony_doctor.scan.records import ScanOptions
from harmony_doctor.scan.source import scan_source
from harmony_doctor.scan.summary import summarize
from tests.fuzz_inputs import (
    compressed,
    hostile_text,
    json_text,
    mutated_sample,
    nested_json,
    raw_input,
)

VOCAB = load_vocab()
REFERENCE = datetime(2026, 11, 30)


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


# --- token ingestion -------------------------------------------------------------------------


@given(raw_input, st.sampled_from(INPUT_FORMATS), st.none() | st.text(max_size=6))
def test_parse_tokens_never_crashes(data: bytes, fmt: str, request: str | None) -> None:
    try:
        found = parse_tokens(_text(data), VOCAB.encode, fmt, request)  # type: ignore[arg-type]
    except InputError as exc:
        assert str(exc).strip()
        return
    assert found.tokens, "a TokenInput always carries tokens"
    assert all(0 <= t < VOCAB_SIZE for t in found.tokens)


@given(nested_json)
def test_parse_tokens_deeply_nested_json(text: str) -> None:
    with contextlib.suppress(InputError):
        parse_tokens(text, VOCAB.encode)


@given(st.lists(st.integers(min_value=-(2**80), max_value=2**80), min_size=1, max_size=20))
def test_huge_numbers_are_input_errors_not_crashes(ids: list[int]) -> None:
    for text in (json.dumps(ids), ", ".join(map(str, ids)), json.dumps({"token_ids": ids})):
        try:
            found = parse_tokens(text, VOCAB.encode)
        except InputError:
            assert any(not 0 <= i < VOCAB_SIZE for i in ids)
        else:
            assert list(found.tokens) == ids


# --- Harmony text encoder --------------------------------------------------------------------


@given(hostile_text)
def test_encode_round_trips_any_text(text: str) -> None:
    tokens = VOCAB.encode(text)
    assert all(0 <= t < VOCAB_SIZE for t in tokens)
    assert VOCAB.decode(tokens) == text


@given(st.binary(max_size=300))
def test_encode_of_decoded_bytes(data: bytes) -> None:
    text = _text(data)
    assert VOCAB.decode(VOCAB.encode(text)) == text


# --- log extractor ---------------------------------------------------------------------------


def _check_errors(found: tuple[LogError, ...] | list[LogError]) -> None:
    for error in found:
        assert error.line >= 1
        assert isinstance(error.message, str)
        json.dumps(error.message)


@given(st.one_of(raw_input, mutated_sample()))
def test_extract_text_never_crashes(data: bytes) -> None:
    _check_errors(logs.extract_text(_text(data)))


@given(st.lists(hostile_text, max_size=30), st.integers(1, 10**9))
def test_extract_errors_any_lines(lines: list[str], first: int) -> None:
    found = list(logs.extract_errors(lines, first))
    assert all(first <= e.line for e in found)
    _check_errors(found)


# --- streaming scanner and scan --------------------------------------------------------------


@given(st.one_of(raw_input, mutated_sample()), st.booleans())
def test_scanner_never_crashes(data: bytes, replay: bool) -> None:
    found = scan_source(io.BytesIO(data), "fuzz.log", REFERENCE, replay)
    assert found.lines >= 0
    assert found.damage is None  # plain bytes are never damage


@given(st.one_of(raw_input, compressed()), st.sampled_from(["x.log", "x.log.gz", "x.zst"]))
def test_scan_of_any_file_reports_instead_of_raising(data: bytes, name: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        path.write_bytes(data)
        result = scanning.scan([Source(name, path)], ScanOptions(jobs=1), now=REFERENCE)
        (report,) = result.files
        # Binary data is reported as skipped with its reason, never as a clean file.
        assert report.status in ("ok", "partial", "skipped")
        # a file not read whole says why; one read whole says only what it was read as
        if report.status != "ok":
            assert report.reason is not None
        else:
            assert report.reason is None or report.reason.endswith(LATIN1), report.reason
        if report.status == "skipped":
            assert not result.events
        table = summarize(result, ("code", "pattern", "day"))
        assert int(table["count"].sum() or 0) == len(result.events)
        json.dumps(table.to_dicts())


# --- event files read back -------------------------------------------------------------------


@given(
    st.one_of(raw_input, json_text.map(str.encode)), st.sampled_from([".csv", ".jsonl", ".parquet"])
)
def test_read_table_of_garbage_is_an_input_error(data: bytes, suffix: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"events{suffix}"
        path.write_bytes(data)
        try:
            frame = reading.read_table(path)
        except InputError as exc:
            assert str(exc).startswith(f"cannot read {path}")
        else:
            assert isinstance(frame, pl.DataFrame)


cells = st.none() | hostile_text | st.sampled_from(["=1+1", "+x", "-2", "@SUM(A1)", "\tx", "\rx"])


@given(st.lists(st.tuples(cells, st.none() | st.integers(-(2**62), 2**62)), max_size=20))
def test_events_round_trip_every_format(rows: list[tuple[str | None, int | None]]) -> None:
    frame = pl.DataFrame(rows, schema={"message": pl.Utf8, "line": pl.Int64}, orient="row")
    with tempfile.TemporaryDirectory() as folder:
        for suffix in (".csv", ".jsonl", ".parquet"):
            path = Path(folder) / f"events{suffix}"
            export.write_table(frame, path)
            back = reading.read_table(path)
            assert back.height == frame.height
            messages = back["message"].to_list() if back.height else []
            expected = frame["message"].to_list()
            if suffix == ".csv":  # CSV has no null/empty distinction, and shows controls
                expected = [visible(m) if m else None for m in expected]
                messages = [m if m else None for m in messages]
            assert messages == expected


def test_vocab_fixture_is_the_module_vocab(vocab: Vocab) -> None:
    assert vocab is VOCAB
