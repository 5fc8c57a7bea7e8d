"""Each file's report says how many failure-window lines (and searched texts) the Rust reader
and search declined and Python read instead (`rust_declined`, `--format json`)."""

from __future__ import annotations

from pathlib import Path

import pytest

import harmony_doctor as hd
from harmony_doctor.native import NATIVE_ENV, use_native

ERROR = (
    "2026-11-12 14:02:{s:02d} ERROR [serving_chat.py:1001] openai_harmony.HarmonyError: "
    'unexpected tokens remaining in message header: ["{words}"]\n'
)


def _log(path: Path, words: list[str]) -> Path:
    path.write_text("".join(ERROR.format(s=n, words=w) for n, w in enumerate(words)))
    return path


@pytest.mark.skipif(
    not use_native(), reason="the Rust extension is not built (or HARMONY_DOCTOR_NATIVE=0)"
)
def test_non_ascii_window_lines_are_counted_ascii_ones_are_not(tmp_path: Path) -> None:
    plain = _log(tmp_path / "plain.log", ["analysis", "commentary"])
    accented = _log(tmp_path / "accented.log", ["analysis", "analyse réponse", "final"])
    result = hd.scan_paths([plain, accented])
    declined = {Path(f.path).name: f.rust_declined for f in result.files}
    assert declined["plain.log"] == 0
    assert declined["accented.log"] >= 1  # its one non-ASCII line, by the reader and the search
    assert [f.failures for f in result.files] == [2, 3]
    again = hd.scan_paths([accented])  # counted per file, not per process
    assert again.files[0].rust_declined == declined["accented.log"]


def test_without_the_rust_core_nothing_is_declined(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(NATIVE_ENV, "0")
    result = hd.scan_paths([_log(tmp_path / "a.log", ["analyse réponse"])])
    assert (result.files[0].failures, result.files[0].rust_declined) == (1, 0)
