"""timestamps.py: formats and the year rule for logs without a year."""

from __future__ import annotations

from datetime import datetime

import pytest

from harmony_doctor.inputs.timestamps import dated, own_stamp, parse_timestamp

REF = datetime(2026, 1, 3, 12, 0, 0)


def test_iso_and_bracketed_forms() -> None:
    assert parse_timestamp("[2025-08-07 21:37:03] ERROR: x", REF) == datetime(2025, 8, 7, 21, 37, 3)
    assert parse_timestamp("2025-09-15 11:29:27,313 - lmdeploy - ERROR", REF) == datetime(
        2025, 9, 15, 11, 29, 27
    )
    assert parse_timestamp("time=2025-08-07T21:37:03.123Z level=ERROR", REF) == datetime(
        2025, 8, 7, 21, 37, 3
    )


def test_vllm_without_year_takes_the_reference_year() -> None:
    line = "(APIServer pid=1) ERROR 01-02 09:02:27 [serving_chat.py:1145] boom"
    assert parse_timestamp(line, REF) == datetime(2026, 1, 2, 9, 2, 27)


def test_vllm_date_after_the_reference_is_last_year() -> None:
    line = "(APIServer pid=1) INFO 12-30 23:59:59 [loggers.py:123] x"
    assert parse_timestamp(line, REF) == datetime(2025, 12, 30, 23, 59, 59)


def test_no_or_impossible_timestamp() -> None:
    assert parse_timestamp("Traceback (most recent call last):", REF) is None
    assert parse_timestamp("INFO 02-30 10:00:00 nope", REF) is None


def test_wrapper_times_become_canonical_utc_stamps() -> None:
    from harmony_doctor.inputs.timestamps import canonical_epoch, canonical_syslog, canonical_utc

    assert canonical_utc("2026-11-27T10:00:01.123456789Z") == b"2026-11-27 10:00:01"
    assert canonical_utc("2026-11-27T00:30:00+01:00") == b"2026-11-26 23:30:00"
    assert canonical_utc("2026-11-27T10:00:01-0230") == b"2026-11-27 12:30:01"
    assert canonical_utc("2026-02-30T10:00:01Z") is None
    assert canonical_epoch(1795773601123456, 1_000_000) == b"2026-11-27 10:00:01"
    assert canonical_syslog("Nov", " 7", "10:00:01") == b"11-07 10:00:01"
    assert canonical_syslog("Foo", "7", "10:00:01") is None


@pytest.mark.parametrize(
    ("head", "stamp"),
    [
        # Ollama's request line through journald: gin's full date, not the yearless prefix
        (
            b"Dec 11 09:58:58 quorra ollama[812]: [GIN] 2024/12/11 - 09:58:58 | 200 |",
            b"2024-12-11 09:58:58",
        ),
        (
            b'[GIN] 2025/08/20 - 09:38:05 | 200 | 1.2s | ::1 | POST "/api/chat"',
            b"2025-08-20 09:38:05",
        ),
        # a full date beats a vLLM stamp wherever either stands; the leftmost full date decides
        (b"INFO 11-27 10:00:01 [GIN] 2024/12/11 - 09:58:58", b"2024-12-11 09:58:58"),
        (b"[GIN] 2024/12/11 - 09:58:58 | 2025-01-01 01:01:01", b"2024-12-11 09:58:58"),
        (b"2025-01-01 01:01:01 [GIN] 2024/12/11 - 09:58:58", b"2025-01-01 01:01:01"),
        (b"[GIN] 2024/13/11 - 09:58:58 | 2025-01-01 01:01:01", None),
        # gin's shape exactly: ` - ` between date and time, no digit before the year
        (b"2024/12/11 09:58:58", None),
        (b"2024/12/11  - 09:58:58", None),
        (b"2024-12/11 - 09:58:58", None),
        (b"12024/12/11 - 09:58:58", None),
    ],
)
def test_own_stamp_reads_full_dates_first(head: bytes, stamp: bytes | None) -> None:
    assert own_stamp(head) == stamp


def test_a_prefix_time_is_dated_when_it_carries_its_year() -> None:
    assert dated("2024-12-11T09:59:30.186Z")
    assert dated("2024/12/11 - 09:59:30")
    assert not dated("Dec 11 09:59:30")
    assert not dated("12-11 09:59:30")
    assert not dated("2024-13-11T09:59:30")
