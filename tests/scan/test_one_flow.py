"""One flow: a file gives the same failures, codes and lines through `explain FILE`, `scan FILE`
and `hd.scan_file`, whatever it holds (token ids, Harmony text, error bodies, tracebacks, logs)."""

from __future__ import annotations

import json
import random
import shlex
from pathlib import Path

import pytest

import harmony_doctor as hd
from tests.helpers import CASES, SAMPLES, run

SAMPLE_FILES = sorted(p for p in SAMPLES.iterdir() if p.is_file())
# Golden explain cases that read a whole input as given (no option that picks a part of it).
GOLDEN_INPUTS = sorted(
    CASES / f"{cmd.stem}.in"
    for cmd in CASES.glob("explain*.cmd")
    if shlex.split(cmd.read_text())[-1] == "-"
    and "--request" not in cmd.read_text()
    and (CASES / f"{cmd.stem}.in").exists()
)
LOGS = [
    SAMPLES / name
    for name in (
        "vllm-traceback.log",
        "vllm-requests.log",
        "other-engines.log",
        "lmdeploy.log",
        "sglang-exception-group.log",
        "error-bodies.txt",
    )
]
NOISE = [
    "2026-11-20 10:00:00 INFO served a request in 12 ms",
    '(APIServer pid=7) INFO:     10.0.0.1:5000 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
    "",
    "DEBUG nothing to see here",
]


def _mixed_files(folder: Path, count: int = 8) -> list[Path]:
    """Logs of several servers cut and spliced at line boundaries, with noise between."""
    rng = random.Random(19)
    files = []
    for index in range(count):
        parts: list[str] = []
        for log in rng.sample(LOGS, k=rng.randint(2, 4)):
            lines = log.read_text().splitlines()
            parts.extend(rng.choice(NOISE) for _ in range(rng.randint(0, 3)))
            parts.extend(lines)
        path = folder / f"mixed-{index}.log"
        path.write_text("\n".join(parts) + "\n")
        files.append(path)
    return files


def _explained(path: Path) -> tuple[set[str], set[tuple[str, int]]]:
    """Error codes `explain FILE --format json` reports, and (code, line) of its log findings;
    nothing when explain refuses the input (a chat request: nothing in it to explain)."""
    result = run(["explain", "--format", "json", str(path)])
    if result.exit_code == 2:
        assert result.stderr.startswith("harmony-doctor: error: ") and not result.stdout
        return set(), set()
    assert result.exit_code in (0, 1), result.stderr
    record = json.loads(result.stdout)
    findings = [f for f in record["findings"] if f["severity"] == "error"]
    completions = [
        f for c in record.get("completions", []) for f in c["findings"] if f["severity"] == "error"
    ]
    codes = {f["code"] for f in [*findings, *completions]}
    return codes, {(f["code"], f["line"]) for f in findings if f.get("line") is not None}


def _scanned(path: Path, tmp_path: Path) -> tuple[set[str], set[tuple[str, int]]]:
    """The same from `scan FILE --events`, checked equal to `hd.scan_file`."""
    events_path = tmp_path / f"{path.stem}-events.jsonl"
    result = run(["scan", "--jobs", "1", "--events", str(events_path), str(path)])
    assert result.exit_code in (0, 1), result.stderr
    rows = [json.loads(line) for line in events_path.read_text().splitlines() if line]
    api = hd.scan_file(path)
    assert sorted((e.code, e.line) for e in api.events) == sorted(
        (r["code"], r["line"]) for r in rows
    )
    errors = [r for r in rows if r["severity"] == "error"]
    return {r["code"] for r in errors}, {(r["code"], r["line"]) for r in errors}


def _agree(path: Path, tmp_path: Path) -> None:
    explained_codes, explained_lines = _explained(path)
    scanned_codes, scanned_lines = _scanned(path, tmp_path)
    assert explained_codes == scanned_codes, path.name
    assert explained_lines <= scanned_lines, path.name


@pytest.mark.parametrize("path", SAMPLE_FILES, ids=[p.name for p in SAMPLE_FILES])
def test_explain_and_scan_agree_on_every_sample(path: Path, tmp_path: Path) -> None:
    _agree(path, tmp_path)


@pytest.mark.parametrize("source", GOLDEN_INPUTS, ids=[p.stem for p in GOLDEN_INPUTS])
def test_explain_and_scan_agree_on_every_golden_input(source: Path, tmp_path: Path) -> None:
    path = tmp_path / source.stem
    path.write_bytes(source.read_bytes())
    _agree(path, tmp_path)


def test_explain_and_scan_agree_on_generated_mixed_logs(tmp_path: Path) -> None:
    for path in _mixed_files(tmp_path):
        _agree(path, tmp_path)


def test_a_token_file_is_not_clean_to_scan(tmp_path: Path) -> None:
    """The disagreement this flow ended: token-id files were 'No Harmony failures found'."""
    for name, code in (
        ("seed-multiturn-completion.json", "HD101"),
        ("duplicate-recipient.ids", "HD102"),
        ("ignore-eos.json", "HD111"),
    ):
        found = hd.scan_file(SAMPLES / name)
        assert [(e.code, e.line) for e in found.events if e.severity == "error"] == [(code, 1)]
        assert found.report.status == "ok" and found.report.lines >= 1


@pytest.mark.parametrize("layout", ["lines", "pretty", "objects"])
def test_a_file_of_several_token_streams_is_not_clean_to_scan(tmp_path: Path, layout: str) -> None:
    """An id list a line (as a script dumps them), pretty-printed documents one after the other
    (as jq reads them) or response objects a line: scan diagnoses every stream, each at the
    line it starts on; explain names them and asks which one (exit 2), never 'clean'."""
    ids = json.loads((SAMPLES / "ignore-eos.json").read_text())  # HD111
    clean = [*ids[:-2], 200002]  # the same completion ended with <|return|> alone
    streams = [ids, clean, ids]
    if layout == "lines":
        text = "".join(json.dumps(s) + "\n" for s in streams)
        starts = [1, 3]
    elif layout == "pretty":
        text = "".join(json.dumps(s, indent=1) + "\n" for s in streams)
        starts = [1, (len(ids) + 2) + (len(clean) + 2) + 1]
    else:
        text = "".join(
            json.dumps({"id": f"r{n}", "output_token_ids": s}) + "\n" for n, s in enumerate(streams)
        )
        starts = [1, 3]
    path = tmp_path / "dump.jsonl"
    path.write_text(text)
    found = hd.scan_file(path)
    assert [(e.code, e.line) for e in found.events if e.severity == "error"] == [
        ("HD111", line) for line in starts
    ]
    explained = run(["explain", str(path)])
    assert explained.exit_code == 2 and "holds 3 token streams" in explained.stderr


def test_a_token_file_keeps_every_byte_when_it_is_a_log_after_all(tmp_path: Path) -> None:
    """A small file looked at whole, then read as a log, loses nothing: lines and bytes."""
    path = tmp_path / "small.log"
    text = "".join(f"line {n} with nothing\n" for n in range(5000))
    path.write_text(text)
    found = hd.scan_file(path)
    assert found.report.lines == 5000 and found.report.bytes == len(text.encode())


def test_a_bare_remainder_line_is_found_by_scan_as_by_explain(tmp_path: Path) -> None:
    """A header remainder quoted on its own (`Some("...")`) before a logged error: explain found
    HD107 and HD122, scan HD122 only (the line was no hit of the byte-level pass)."""
    path = tmp_path / "bare.log"
    path.write_text(
        "2026-11-20 10:00:01 INFO served request\n"
        'the header was Some("<|constrain|>json<|end|><|start|>assistant")\n'
        "2026-11-20 10:00:02 ERROR openai_harmony.HarmonyError: Unknown role: bash\n"
    )
    _agree(path, tmp_path)
    assert sorted((e.code, e.line) for e in hd.scan_file(path).events) == [
        ("HD107", 2),
        ("HD122", 3),
    ]


def test_a_large_text_with_markup_is_read_as_a_log(tmp_path: Path) -> None:
    """Telling a completion from a log that quotes markup runs the log reader over the whole
    text: only texts of a completion's size are asked; a larger one is read as a log."""
    from harmony_doctor.scan.documents import TEXT_BYTES

    path = tmp_path / "chat.log"
    line = '2026-11-20 10:00:01 INFO reply "content": "<|channel|>final<|message|>Hi"\n'
    path.write_text(line * (TEXT_BYTES // len(line) + 1))
    found = hd.scan_file(path)
    assert {e.code for e in found.events} == {"HD205"}  # markup returned, line by line
    assert all(e.source == "log" for e in found.events)
    small = tmp_path / "small.log"
    small.write_text(line * 3)
    assert {e.source for e in hd.scan_file(small).events} == {"log"}


def test_a_small_verbose_log_quoting_markup_is_read_as_a_log(tmp_path: Path) -> None:
    """llama-server's verbose log prints each reply it parses (`srv  update_chat_: Parsing chat
    message: <|channel|>...`): a log of requests, not one completion, at any size. Small, it
    was read as one Harmony text: a failure (HD101) and no request."""
    records = "".join(
        f"slot launch_slot_: id  1 | task {n} | processing task\n"
        f"srv  update_chat_: Parsing chat message: <|channel|>analysis<|message|>Msg {n}\n"
        f"srv  update_chat_: Parsing chat message: <|channel|>analysis<|message|>Msg {n} "
        "reasoning.<|end|><|start|>assistant<|channel|>final<|message|>Answer\n"
        f"srv  log_server_r: request: POST /v1/chat/completions 127.0.0.1 200\n"
        for n in range(20)
    )
    path = tmp_path / "verbose.log"
    path.write_text(records)
    found = hd.scan_file(path)
    assert (found.events, sum(t.count for t in found.requests)) == ((), 20)
    _agree(path, tmp_path)
