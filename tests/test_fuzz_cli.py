"""The CLI under hostile input: never a traceback, bad input is one stderr line and exit 2,
good input never exits 2, JSON output always parses, no raw ESC byte ever reaches stdout."""

from __future__ import annotations

import json
import random
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from harmony_doctor.harmony.vocab import load_vocab
from tests.fuzz_inputs import NASTY_PIECES, compressed, hostile_text, mutated_sample, raw_input
from tests.generators import (
    CALL,
    CHANNEL,
    CONSTRAIN,
    END,
    MESSAGE,
    RETURN,
    START,
    mutate,
    well_formed,
)
from tests.helpers import Result, run

VOCAB = load_vocab()
# Special tokens whose text makes an input Harmony text (ingest's detection).
HARMONY_MARKERS = {CALL, CHANNEL, CONSTRAIN, END, MESSAGE, RETURN, START}

TOKEN_COMMANDS = (
    ["explain"],
    ["explain", "--lenient"],
    ["explain", "--role", "none"],
    ["decode"],
    ["decode", "--tokens"],
    ["recover"],
)


def check_contract(result: Result, json_output: bool, inputs: int = 1) -> None:
    """Exit 0/1/2, no raw ESC on stdout, JSON that parses; exit 2 says why in one printable
    line (one per input that could not be read whole, when a scan reads several)."""
    assert result.exit_code in (0, 1, 2), result
    assert "\x1b" not in result.stdout, "raw ESC on stdout"
    if result.exit_code == 2:
        lines = result.stderr.splitlines()
        assert 1 <= len(lines) <= inputs, f"not one line on stderr: {result.stderr!r}"
        for line in lines:
            assert line.startswith("harmony-doctor: ")
            assert all(c.isprintable() for c in line), line
    elif json_output:
        json.loads(result.stdout)
    else:
        assert not result.stderr.strip() or result.stderr.startswith("harmony-doctor: ")


@given(st.sampled_from(TOKEN_COMMANDS), st.booleans(), st.one_of(raw_input, mutated_sample()))
def test_token_commands_keep_the_contract(command: list[str], as_json: bool, data: bytes) -> None:
    args = [*command, "-", *(["--format", "json"] if as_json else [])]
    check_contract(run(args, data), as_json)


@given(
    st.sampled_from(["table", "json", "csv"]), st.one_of(raw_input, mutated_sample(), compressed())
)
def test_scan_stdin_keeps_the_contract(output: str, data: bytes) -> None:
    result = run(["scan", "-", "-j", "1", "--format", output], data)
    check_contract(result, output == "json")
    if output == "json" and result.exit_code != 2:
        record = json.loads(result.stdout)
        assert record["totals"]["failures"] == sum(g["count"] for g in record["groups"])


@given(st.booleans(), st.one_of(raw_input, hostile_text.map(str.encode)))
def test_render_keeps_the_contract(as_json: bool, data: bytes) -> None:
    args = ["render", "-", *(["--format", "json"] if as_json else [])]
    check_contract(run(args, data), as_json)


@given(st.booleans(), hostile_text)
def test_rules_with_any_code(as_json: bool, code: str) -> None:
    args = ["rules", "--", code, *(["--format", "json"] if as_json else [])]
    if not code or code.startswith("-"):
        args = ["rules", "--format", "json", "--", code] if as_json else ["rules", "--", code]
    check_contract(run(args), as_json)


@given(st.lists(st.sampled_from(NASTY_PIECES) | st.text(max_size=10), max_size=6))
def test_any_arguments_are_usage_errors_at_worst(args: list[str]) -> None:
    result = run(args, b"")
    check_contract(result, False)


@given(st.integers(0, 2**32), st.integers(0, 3), st.sampled_from(["ids", "text"]))
def test_good_token_streams_never_exit_2(seed: int, mutations: int, shape: str) -> None:
    rng = random.Random(seed)
    tokens = VOCAB.encode(well_formed(rng))
    for _ in range(mutations):
        tokens = mutate(tokens, rng) or tokens
    data = json.dumps(tokens) if shape == "ids" else VOCAB.decode(tokens)
    if shape == "text" and not HARMONY_MARKERS.intersection(tokens):
        return  # mutations removed every marker: prose, not Harmony text (an input error)
    for command in (["explain", "-"], ["decode", "-"], ["recover", "-", "--format", "json"]):
        result = run(command, data)
        assert result.exit_code in (0, 1), (command, result)
        check_contract(result, "json" in command)


@given(hostile_text)
def test_hostile_message_text_is_shown_literally(body: str) -> None:
    stream = f"<|channel|>final<|message|>{body}<|return|>"
    for command in (["decode", "-"], ["explain", "-"], ["recover", "-"]):
        result = run(command, stream)
        check_contract(result, False)
    shown = run(["decode", "-"], stream)
    assert shown.exit_code == 0
    for piece in ("[bold]", "[/INST]", "[link=http://x]", ":warning:"):
        if piece in body:
            assert piece in shown.stdout


@given(st.lists(st.one_of(raw_input, compressed()), min_size=1, max_size=3))
def test_scan_folder_exports_are_valid(files: list[bytes]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        logs = root / "logs"
        logs.mkdir()
        for index, data in enumerate(files):
            suffix = ".gz" if data.startswith(b"\x1f\x8b") else ""
            (logs / f"f{index}.log{suffix}").write_bytes(data)
        events, summary = root / "events.jsonl", root / "summary.csv"
        args = ["scan", str(logs), "-j", "1", "--format", "json", "--events", str(events)]
        result = run([*args, "--summary-csv", str(summary)])
        check_contract(result, result.exit_code != 2, inputs=len(files))
        record = json.loads(result.stdout)
        for line in events.read_text().splitlines():
            json.loads(line)
        assert len(events.read_text().splitlines()) == record["totals"]["failures"]
        again = run(["report", str(events), "--format", "json"])
        check_contract(again, True)
        assert json.loads(again.stdout)["totals"]["failures"] == record["totals"]["failures"]
