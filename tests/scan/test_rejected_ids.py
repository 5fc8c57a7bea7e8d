"""Logged completions with ids openai-harmony rejects are failures of their own (HD177, the
catalogue's rejected_ids form), counted as requests too; never silence, with either scan core."""

from __future__ import annotations

from pathlib import Path

import pytest

import harmony_doctor as hd
from harmony_doctor.faults.catalogue import FORM
from harmony_doctor.faults.rules import RULES

LINE = (
    "(APIServer pid=1) INFO 11-28 10:15:0{n} [logger.py:71] Generated response chatcmpl-{n}: "
    "output: 'x', output_token_ids: [200005, 35644, {bad}, 200008, 12194, 200002], "
    "finish_reason: stop\n"
)
CLEAN = (
    "(APIServer pid=1) INFO 11-28 10:15:09 [logger.py:71] Generated response chatcmpl-ok: "
    "output: 'x', output_token_ids: [200005, 35644, 200008, 12194, 200002], finish_reason: stop\n"
)


@pytest.fixture(params=["0", "1"], ids=["python", "native"])
def core(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "1" and hd.scan_core() != "native":
        pytest.skip("the Rust core is not built")
    monkeypatch.setenv("HARMONY_DOCTOR_NATIVE", request.param)
    return str(request.param)


@pytest.mark.parametrize("bad", ["999999999", "-5", "1.5"])
def test_rejected_ids_are_a_failure_of_their_own(tmp_path: Path, core: str, bad: str) -> None:
    log = tmp_path / "vllm.log"
    log.write_text(LINE.format(n=1, bad=bad) + CLEAN)
    result = hd.scan_paths([log], hd.ScanOptions(jobs=1))
    (event,) = result.events
    assert (event.code, event.kind, event.line) == ("HD177", "rejected_ids", 1)
    assert event.request_id == "chatcmpl-1" and "ids openai-harmony rejects" in event.message
    assert FORM["rejected_ids"].code == event.code and RULES["HD177"].severity == "error"
    totals = hd.summarize_scan(result).totals
    assert totals["requests"] == 2 and totals["rate"] == pytest.approx(0.5)


def test_rejected_prompt_ids_are_left_alone(tmp_path: Path, core: str) -> None:
    log = tmp_path / "vllm.log"
    log.write_text(
        "(APIServer pid=1) INFO 11-28 10:15:01 [logger.py:71] Received request chatcmpl-1: "
        "params: SamplingParams(n=1), prompt_token_ids: [200006, -5, 200008], lora_request: None.\n"
    )
    assert hd.scan_paths([log], hd.ScanOptions(jobs=1)).events == ()


def test_ids_cut_by_damaged_compressed_data_are_no_rejected_ids(tmp_path: Path, core: str) -> None:
    """The last line of a compressed log cut short holds ids the damage cut, not ids the
    server logged wrong: the file is partial, and that line is no HD177 (whole, it is one)."""
    import gzip
    import zlib

    first, bad = CLEAN.replace("chatcmpl-ok", "chatcmpl-a"), LINE.format(n=2, bad="-5")
    data = gzip.compress((first + bad + CLEAN).encode())
    inside = range(len(first) + bad.index("-5") + 2, len(first) + len(bad) - 1)
    cuts = [
        n
        for n in range(len(data))
        if len(zlib.decompressobj(wbits=31).decompress(data[:n])) in inside
    ]
    assert cuts, "cut points inside the line, after its rejected id"
    for n in cuts:
        (tmp_path / "app.log.gz").write_bytes(data[:n])
        found = hd.scan_file(tmp_path / "app.log.gz")
        # the two lines were read from a member cut before its check: said, not counted
        assert found.report.status == "partial" and found.report.lines == 0
        assert "2 more lines read from data that did not pass" in (found.report.reason or "")
        assert [e.code for e in found.events] == []
    (tmp_path / "app.log.gz").write_bytes(data)
    assert [e.code for e in hd.scan_file(tmp_path / "app.log.gz").events] == ["HD177"]
