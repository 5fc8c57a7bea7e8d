"""Zero only when everything was read (issue 34, part A): any cut, skip, unknown archive, zeroed
data or unreadable stream marks the input partial or skipped with its reason, the run exits 2,
and it never says "No Harmony failures found"; and the numbers it does print are the totals'."""

from __future__ import annotations

import gzip
import lzma
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harmony_doctor.inputs.files import MAX_LINE
from tests.helpers import SAMPLES, run

NOTHING_FOUND = "No Harmony failures found"
FAILURE = (
    b"(APIServer pid=7) ERROR 11-27 10:00:05 [serving_chat.py:1145] openai_harmony.HarmonyError:"
    b' unexpected tokens remaining in message header: Some("to=functions.x")\n'
)


def zstd_compress(data: bytes) -> bytes:
    import zstandard

    return zstandard.ZstdCompressor().compress(data)


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


# --- 5. a lone CR is a line end -------------------------------------------------------------


@pytest.mark.parametrize("native", ["1", "0"])
def test_a_lone_cr_ends_a_line_in_scan_rust_and_reference_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, native: str
) -> None:
    monkeypatch.setenv("HARMONY_DOCTOR_NATIVE", native)
    log = tmp_path / "cr.log"
    log.write_bytes(b"INFO start\r" + FAILURE.rstrip(b"\n") + b"\rINFO end\r")
    code, out, _ = scan(str(log), "--format", "json")
    assert code == 1
    assert '"lines": 3' in out and '"failures": 1' in out and f"{log}:2" in out


def test_a_lone_cr_ends_a_line_in_explain(tmp_path: Path) -> None:
    log = tmp_path / "cr.log"
    log.write_bytes(b"INFO start\r" + FAILURE.rstrip(b"\n") + b"\rINFO end\r")
    result = run(["explain", str(log)])
    assert result.exit_code == 1 and "3 line(s)" in result.stdout


def test_lone_crs_become_line_ends_wherever_reads_cut_them() -> None:
    from harmony_doctor.inputs.files import LineEnds

    data = b"a\rb\r\nc\r\rd\r"

    class Pieces:
        def __init__(self, size: int) -> None:
            self.left = [data[i : i + size] for i in range(0, len(data), size)]

        def read(self, n: int = -1, /) -> bytes:
            return self.left.pop(0) if self.left else b""

        def close(self) -> None:
            pass

    for size in range(1, len(data) + 1):
        reader, out = LineEnds(Pieces(size)), b""
        while chunk := reader.read(size):
            out += chunk
        assert out == b"a\nb\r\nc\n\nd\n", size


# --- 6. zeroed data -----------------------------------------------------------------------------


@pytest.mark.parametrize("head", [b"", b"INFO fine\n"])
def test_zeroed_data_makes_the_file_partial(tmp_path: Path, head: bytes) -> None:
    log = tmp_path / "zero.log"
    log.write_bytes(head + b"\0" * (1 << 20))
    code, out, _ = scan(str(log))
    assert_not_read_whole(code, out, "zeroed data")


# --- 3. scan's own outputs, compressed or not, renamed --------------------------------------


def test_scans_own_outputs_are_left_out_by_content(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "app.log").write_bytes(FAILURE)
    out = tmp_path / "out"
    out.mkdir()
    written = ["--html", "r.html", "--events", "e.jsonl", "--prometheus", "m.prom"]
    args = [str(out / a) if i % 2 else a for i, a in enumerate(written)]
    assert scan(str(logs), *args)[0] == 1
    renamed = {"r.html": "page.log", "m.prom": "metrics.log", "e.requests.jsonl": "t.log"}
    for name, new in renamed.items():
        (out / name).rename(logs / new)
    (logs / "events.log.gz").write_bytes(gzip.compress((out / "e.jsonl").read_bytes()))
    (logs / "page.log.gz").write_bytes(gzip.compress((logs / "page.log").read_bytes()))
    code, stdout, stderr = scan(str(logs), "--format", "json")
    assert code == 1 and '"failures": 1' in stdout
    for name in ("page.log", "metrics.log", "t.log", "events.log.gz", "page.log.gz"):
        assert f"ignored {logs / name}: " in stderr


# --- 4. tar archives --------------------------------------------------------------------------


@pytest.mark.parametrize("pack", [bytes, gzip.compress, lzma.compress, zstd_compress])
def test_a_tar_archive_is_refused_with_how_to_extract_it(
    tmp_path: Path, pack: Callable[[bytes], bytes]
) -> None:
    import io
    import tarfile

    path = tmp_path / "logs.tar"
    data = io.BytesIO()
    with tarfile.TarFile(fileobj=data, mode="w") as archive:
        for n in range(2):
            info = tarfile.TarInfo(f"app{n}.log")
            info.size = len(FAILURE)
            archive.addfile(info, io.BytesIO(FAILURE))
    path.write_bytes(pack(data.getvalue()))
    code, out, err = scan(str(path))
    assert code == 2 and NOTHING_FOUND not in out
    assert f"skipped {path}: a tar archive" in err and "tar -xf" in err


# --- 1. token-stream documents larger than scan reads whole ------------------------------------


def test_a_large_document_of_id_lists_is_refused_not_passed(tmp_path: Path) -> None:
    ids = (SAMPLES / "duplicate-recipient.ids").read_text().split()
    line = ("[" + ", ".join(ids) + "]\n").encode()
    path = tmp_path / "ids.jsonl"
    path.write_bytes(line * ((4 << 20) // len(line) + 10))
    code, out, err = scan(str(path))
    assert_not_read_whole(code, out, "token-stream document")
    assert "split -C 4M" in err


def test_a_large_log_quoting_ids_is_still_a_log(tmp_path: Path) -> None:
    log = (SAMPLES / "vllm-requests.log").read_bytes()
    path = tmp_path / "vllm.log"
    path.write_bytes(log * ((4 << 20) // len(log) + 10))
    code, out, _ = scan(str(path), "--format", "json")
    assert code == 1 and '"skipped": 0' in out and '"partial": 0' in out


# --- the rule, over generated damage -----------------------------------------------------------

DAMAGES = ["cut-line", "zeroed", "truncated-gzip", "corrupt-gzip", "tar", "tar.gz", "tar.zst"]


def _damaged(text: bytes, damage: str, at: float) -> bytes:
    """`text` (a clean log) with one damage at the fraction `at` of it."""
    import io
    import tarfile

    if damage == "cut-line":
        cut = int(len(text) * at)
        return text[:cut] + b"y" * (MAX_LINE + 1) + text[cut:]
    if damage == "zeroed":
        cut = int(len(text) * at)
        return text[:cut] + b"\0" * 4096 + text[cut:]
    if damage.endswith("gzip"):
        packed = gzip.compress(text)
        cut = 10 + int((len(packed) - 11) * at)  # past the header, before the last byte
        if damage == "truncated-gzip":
            return packed[:cut]
        return packed[:cut] + bytes([packed[cut] ^ 0xFF]) + packed[cut + 1 :]
    data = io.BytesIO()
    with tarfile.TarFile(fileobj=data, mode="w") as archive:
        info = tarfile.TarInfo("app.log")
        info.size = len(text)
        archive.addfile(info, io.BytesIO(text))
    packs: dict[str, Callable[[bytes], bytes]] = {
        "tar": bytes,
        "tar.gz": gzip.compress,
        "tar.zst": zstd_compress,
    }
    return packs[damage](data.getvalue())


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    lines=st.lists(st.sampled_from(["INFO ok", "WARN slow", "INFO request 200", ""]), min_size=1),
    damage=st.sampled_from(DAMAGES),
    at=st.floats(0, 1),
)
def test_any_damage_exits_2_and_never_says_no_failures(
    tmp_path: Path, lines: list[str], damage: str, at: float
) -> None:
    text = ("\n".join(lines) + "\n").encode()
    path = tmp_path / "app.log"
    path.write_bytes(_damaged(text, damage, at))
    code, out, err = scan(str(path))
    assert code == 2, (damage, out, err)
    assert NOTHING_FOUND not in out
    assert ("partial" in err or "skipped" in err) and str(path) in err
