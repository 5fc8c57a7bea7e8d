"""A Parquet file's row groups, sized from its footer before anything is decoded."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harmony_doctor.inputs import parquet_footer
from harmony_doctor.inputs.parquet_footer import FooterError, row_group_sizes, too_large
from tests.helpers import SAMPLES, run


def _distinct_texts(rows: int, width: int) -> list[str]:
    return [f"{n:0{width}d}" for n in range(rows)]  # no dictionary can shrink them


def test_each_row_group_is_sized_with_its_largest_column(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    rows, width = 10_000, 100
    frame = pl.DataFrame({"n": list(range(rows)), "text": _distinct_texts(rows, width)})
    frame.write_parquet(path, row_group_size=3_000, compression="zstd")
    sizes = row_group_sizes(path)
    assert [s.index for s in sizes] == [0, 1, 2, 3]  # 3,000 + 3,000 + 3,000 + 1,000 rows
    assert all(s.column == "text" for s in sizes)
    rows_in = [3000, 3000, 3000, 1000]
    assert [s.column_decoded >= n * width for s, n in zip(sizes, rows_in, strict=True)] == [
        True
    ] * 4
    assert all(s.decoded >= s.column_decoded for s in sizes)
    assert sum(s.decoded for s in sizes) < 2 * rows * (width + 8)  # encoded sizes, not a guess


def test_one_huge_cell_is_refused_before_it_is_decoded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An 18 KB file holding a 300 MB string took about 1 GB to read; its footer says so."""
    scanned = tmp_path / "ev.jsonl"
    assert (
        run(["scan", str(SAMPLES / "vllm-traceback.log"), "--events", str(scanned)]).exit_code == 1
    )
    path = tmp_path / "ev.parquet"
    events = pl.read_ndjson(scanned).head(1)
    events.with_columns(pl.lit("x" * 3_000_000).alias("message")).write_parquet(path)
    assert path.stat().st_size < 100_000  # it compresses to almost nothing
    reason = too_large(path, limit=1_000_000)
    assert (
        reason is not None and "column 'message'" in reason and "at most 1,000,000 bytes" in reason
    )
    assert too_large(path, limit=10_000_000) is None
    monkeypatch.setattr(parquet_footer, "MAX_ROW_GROUP", 2 * 1024 * 1024)
    result = run(["report", str(path)])
    assert result.exit_code == 2
    assert result.stderr.startswith(
        f"harmony-doctor: error: cannot read {path}: row group 0 holds "
    )
    assert result.stderr.count("\n") == 1
    monkeypatch.setattr(parquet_footer, "MAX_ROW_GROUP", 8 * 1024 * 1024)
    assert run(["report", str(path)]).exit_code == 1  # under the limit: read, its cell cut


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"PAR1", "too short"),
        (b"PAR1" + b"\0" * 8 + b"PAR2", "does not end with PAR1"),
        (b"PAR1" + b"\x15" + (1).to_bytes(4, "little") + b"PAR1", "ends inside a value"),
        (b"PAR1" + b"\0" * 4 + (1 << 30).to_bytes(4, "little") + b"PAR1", "a footer of"),
        (b"PAR1" + b"\x49\xf9\xff\xff\x0f" + (5).to_bytes(4, "little") + b"PAR1", "longer than"),
    ],
)
def test_a_cut_or_foreign_footer_says_why(tmp_path: Path, data: bytes, why: str) -> None:
    path = tmp_path / "bad.parquet"
    path.write_bytes(data)
    with pytest.raises(FooterError, match=why):
        row_group_sizes(path)
    assert too_large(path) is None  # the reader then says what is wrong, in its own words


@settings(max_examples=300, deadline=None)
@given(footer=st.binary(max_size=200), cut=st.integers(0, 400))
def test_any_footer_is_read_or_refused_never_crashes(
    tmp_path_factory: pytest.TempPathFactory, footer: bytes, cut: int
) -> None:
    path = tmp_path_factory.mktemp("f") / "x.parquet"
    real = tmp_path_factory.mktemp("r") / "r.parquet"
    pl.DataFrame({"a": [1, 2], "b": ["x", "y"]}).write_parquet(real)
    body = real.read_bytes()
    length = int.from_bytes(body[-8:-4], "little")
    mangled = body[: -8 - length] + (footer or body[-8 - length : -8])[:cut]
    path.write_bytes(
        mangled + len(mangled[len(body) - 8 - length :]).to_bytes(4, "little") + b"PAR1"
    )
    try:
        sizes = row_group_sizes(path)
    except FooterError:
        return
    assert all(isinstance(s.decoded, int) and isinstance(s.column, str) for s in sizes)
    reason = too_large(path, limit=0)
    assert reason is None or reason.startswith("row group ")
