"""JSON records read whatever their time field holds: a time that is no time is no stamp,
never an error that ends the read (JSON may say NaN, Infinity or 1e400)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harmony_doctor.inputs.json_records import json_record


@pytest.mark.parametrize(
    "time",
    ["NaN", "Infinity", "-Infinity", "1e400", "-1e300", "true", "99999999999999999999999"],
)
def test_a_time_that_is_no_time_is_no_stamp(time: str) -> None:
    record = json_record(f'{{"message":"x","ts":{time}}}'.encode())
    assert record is not None and record.text == b"x" and record.stamp is None


def test_a_time_is_read_as_seconds_or_finer() -> None:
    record = json_record(b'{"message":"x","ts":1795773601.5}')
    assert record is not None and record.stamp == b"2026-11-27 10:00:01"


@given(
    st.one_of(
        st.floats(allow_nan=True, allow_infinity=True),
        st.integers(),
        st.booleans(),
        st.none(),
        st.text(max_size=30),
    )
)
def test_any_time_value_reads(value: object) -> None:
    line = json.dumps({"message": "x", "timestamp": value}).encode()
    record = json_record(line)
    assert record is not None and record.text == b"x"
