""""0" only when everything was read (issue 34, part A): any cut, skip, unknown archive, zeroed
data or unreadable stream marks the input partial or skipped with its reason, the run exits 2,
and it never says "No Harmony failures found"; and the numbers it does print are the totals'."""

from __future__ import annotations

from pathlib import Path

import pytest

from harmony_doctor.inputs.files import MAX_LINE
from tests.helpers import SAMPLES, run

NOTHING_FOUND = "No Harmony failures found"
FAILURE = (
    b"(APIServer pid=7) ERROR 11-27 10:00:05 [serving_chat.py:1145] openai_harmony.HarmonyError:"
    b' unexpected tokens remaining in message header: Some("to=functions.x")\n'
)


def scan(*args: str, stdin: bytes | None = None) -> tuple[int, str, str]:
    result = run(["scan", "-j", "1", *args], stdin)
    return result.exit_code, result.stdout, result.stderr


def assert_not_read_whole(code: int, stdout: str, reason: str) -> None:
    """The general rule: exit 2, the reason said, and never "no failures found"."""
    assert code == 2, stdout
    assert NOTHING_FOUND not in stdout
    assert reason in stdout


# --- 2. a line longer than MAX_LINE ------------------------------------------------------------


def test_a_cut_line_makes_the_file_partial_and_the_run_fail(tmp_path: Path) -> None:
    log = tmp_path / "long.log"
    log.write_bytes(b"INFO " + b"x" * MAX_LINE + b" " + FAILURE + b"INFO fine\n")
    code, out, _ = scan(str(log), "--max-rate", "0.5", "--unrated", "pass")
    assert_not_read_whole(code, out, "longer than 4 MiB read to 4 MiB only")
    assert "partial" in out


# --- 9. --max-rate --------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["nan", "NaN", "+nan"])
def test_a_rate_that_is_no_number_is_a_usage_error(value: str) -> None:
    code, out, err = scan(str(SAMPLES / "vllm-requests.log"), f"--max-rate={value}")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "--max-rate" in err


@pytest.mark.parametrize(("value", "shown"), [("0.00004", "0.004%"), ("1e-9", "0.0000001%")])
def test_the_threshold_is_shown_as_given(value: str, shown: str) -> None:
    code, _, err = scan(str(SAMPLES / "vllm-requests.log"), "--max-rate", value)
    assert code == 1
    assert f"is above {shown}" in err and "<0.01%" not in err


# --- 10. zstd with a long window ------------------------------------------------------------


def test_a_long_window_zstd_file_is_read(tmp_path: Path) -> None:
    import zstandard

    params = zstandard.ZstdCompressionParameters(
        window_log=31, enable_ldm=True, write_content_size=False
    )
    packer = zstandard.ZstdCompressor(compression_params=params).compressobj()
    data = packer.compress(FAILURE * 3) + packer.flush()
    assert zstandard.get_frame_parameters(data).window_size == 1 << 31
    log = tmp_path / "app.log.zst"
    log.write_bytes(data)
    code, out, err = scan(str(log), "--format", "json")
    assert "corrupt" not in out + err
    assert code == 1 and '"failures": 3' in out


# --- 12. stdin named twice --------------------------------------------------------------------


def test_stdin_named_twice_is_read_once() -> None:
    code, out, _ = scan("-", "-", "--format", "json", stdin=FAILURE)
    assert code == 1
    assert '"files": 1' in out and '"failures": 1' in out
