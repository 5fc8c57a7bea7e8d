"""Events folded for the summary: one row per distinct value of everything a summary, a rate or
a chart reads (FOLD_KEYS), standing for `n` events, with their first and last time and the first
one's place and message. Folded a batch at a time, a scan's failures cost memory by their
groups (codes, files, processes, hours), not by their number: the events themselves stay in the
spill and go to `--events` from there (output/tables.py).

Groups are bounded too, whatever the content: past FOLD_LIMIT rows, the patterns outside the
PATTERN_LIMIT largest (by events) are folded into one OTHER pattern, counts kept exact (a
pattern is a template, so this takes many distinct causes: the unknown roles a model invents,
header remainders of every shape)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import polars as pl

# What a folded row keeps of its events: every group key (choices.GROUP_KEYS), what scopes and
# origins read, and the severity annotations are written with.
FOLD_KEYS = (
    "origin",
    "file",
    "pid",
    "server",
    "harmony_version",
    "code",
    "kind",
    "severity",
    "pattern",
    "day",
    "hour",
)
# Folded rows gathered before they are folded again (a few batches' worth).
_REFOLD_ROWS = 1 << 14
# ... or frames (a frame costs far more than its rows where each holds a few: small files).
_REFOLD_FRAMES = 64
# Events in a batch from which its folded rows are copied out of its buffers (_owned): the
# smaller ones held until a refold keep at most _REFOLD_FRAMES such batches alive (a few MiB).
_OWN_FROM = 256
# Folded rows past which the patterns are bounded, and how many of them are kept then.
FOLD_LIMIT = 10_000
PATTERN_LIMIT = 1_000
# The group that stands for the rest: the smallest groups, counted together; no cause of its own.
OTHER = "(other groups)"


def is_folded(frame: pl.DataFrame) -> bool:
    return "n" in frame.columns


def failures_of(frame: pl.DataFrame) -> int:
    """How many events a frame stands for: its rows, or a folded one's `n`."""
    if not is_folded(frame):
        return frame.height
    return int(frame["n"].sum()) if frame.height else 0


def fold(frame: pl.DataFrame) -> pl.DataFrame:
    """An events frame (scan/summary.py events_frame's columns) folded; a folded one as it is.
    Rows keep the order of their first event."""
    return fold_batches(frame, ())


def fold_batches(first: pl.DataFrame, rest: Iterable[pl.DataFrame]) -> pl.DataFrame:
    """Events frames (or folded ones), in order, folded as one: only the rows folded so far and
    one batch are held at a time."""
    import polars as pl

    held = [_rows(first)]
    rows = held[0].height
    for batch in rest:
        held.append(_rows(batch))
        rows += held[-1].height
        if rows > _REFOLD_ROWS or len(held) > _REFOLD_FRAMES:
            held = [_bounded(_merge(pl.concat(held)))]
            rows = held[0].height
    return _bounded(held[0] if len(held) == 1 else _merge(pl.concat(held)))


def _bounded(rows: pl.DataFrame) -> pl.DataFrame:
    """Folded rows, at most FOLD_LIMIT of them by pattern: past it, every pattern but the
    PATTERN_LIMIT with the most events is OTHER (their events counted there, not lost). Folded
    a batch at a time, a pattern put in OTHER early and seen again later is partly in each."""
    import polars as pl

    if rows.height <= FOLD_LIMIT:
        return rows
    kept = (
        rows.filter(pl.col("pattern").ne_missing(OTHER))
        .group_by("pattern")
        .agg(pl.col("n").sum())
        .sort("n", "pattern", descending=[True, False], nulls_last=True)
        .head(PATTERN_LIMIT)["pattern"]
    )
    other = pl.col("pattern").is_in(kept.implode(), nulls_equal=True).not_()
    pattern = pl.when(other).then(pl.lit(OTHER)).otherwise("pattern").alias("pattern")
    return _merge(rows.with_columns(pattern))


def _rows(events: pl.DataFrame) -> pl.DataFrame:
    """Events as folded rows (a folded frame as it is)."""
    import polars as pl

    if is_folded(events):
        return events
    absent = [c for c in FOLD_KEYS if c not in events.columns]  # files written before them
    rows = _merge(
        events.with_columns(
            pl.lit(None, dtype=pl.Int64 if c == "pid" else pl.Utf8).alias(c) for c in absent
        ).select(
            *FOLD_KEYS,
            pl.lit(1, dtype=pl.Int64).alias("n"),
            pl.col("timestamp").alias("first_seen"),
            pl.col("timestamp").alias("last_seen"),
            "line",
            "message",
        )
    )
    # a small file's few events cost little held; a copy per file would cost 0.6 ms each
    return _owned(rows) if events.height >= _OWN_FROM else rows


def _owned(rows: pl.DataFrame) -> pl.DataFrame:
    """Folded rows copied into buffers of their own. A group_by's result shares the buffers
    of the batch it was made from: held until the next refold (up to _REFOLD_FRAMES of them),
    each kept about a third of its spill batch alive (0.55 MiB for a few rows; 200,000 events
    read back: 24 MiB more at the fold's peak, growing with the events). An in-memory IPC copy
    of a few rows costs about 0.6 ms."""
    import io

    import polars as pl

    copy = io.BytesIO()
    rows.write_ipc(copy)
    copy.seek(0)
    return pl.read_ipc(copy)


def _merge(rows: pl.DataFrame) -> pl.DataFrame:
    """Per FOLD_KEYS: how many events (`n`), their first and last stamp, the first one's line
    and message."""
    import polars as pl

    return rows.group_by(list(FOLD_KEYS), maintain_order=True).agg(
        pl.col("n").sum(),
        pl.col("first_seen").min(),
        pl.col("last_seen").max(),
        pl.col("line").first(),
        pl.col("message").first(),
    )
