"""scan/findings.py: logged and replayed failures as events, counted once, redacted on request."""

from __future__ import annotations

import json
from pathlib import Path

from harmony_doctor.harmony.vocab import Vocab
from harmony_doctor.inputs.files import discover
from harmony_doctor.scan.records import ScanOptions
from harmony_doctor.scan.run import scan
from tests.helpers import run
from tests.scan.vllm_logs import P, access, info, scan_folder, traceback


def test_replayed_completion_and_logged_error_count_once(tmp_path: Path, vocab: Vocab) -> None:
    ids = vocab.encode("<|channel|>final<|message|>Hi<|end|><|return|>")
    lines = [
        info(5, "11-28 10:00:00"),
        access(5),
        P.format(pid=5)
        + f"INFO 11-28 10:00:01 [logger.py:71] Generated response chatcmpl-1: output: 'Hi', output_token_ids: {ids}, finish_reason: stop",
        *traceback(
            5, "11-28 10:00:01", "Unexpected token 200002 while expecting start token 200006"
        ),
    ]
    (tmp_path / "a.log").write_text("\n".join(lines) + "\n")
    result = scan_folder(tmp_path)
    (event,) = result.events
    assert event.source == "replay" and event.code == "HD111"
    assert event.origin_index == len(ids) - 1 and event.raise_index == len(ids) - 1
    assert event.harmony_version == ">=0.0.5"  # taken from the merged traceback


def test_lenient_server_faults_found_by_replay_alone(tmp_path: Path, vocab: Vocab) -> None:
    ids = vocab.encode(
        "<|channel|>commentary to=functions.f to=functions.f json<|message|>{}<|call|>"
    )
    line = f"INFO 11-28 10:00:01 [logger.py:71] Generated response r9: output: '', output_token_ids: {ids}, finish_reason: stop"
    (tmp_path / "a.log").write_text(line + "\n")
    (event,) = scan_folder(tmp_path).events
    assert event.code == "HD102" and event.request_id == "r9"
    assert event.origin_index is not None and event.raise_index is not None
    assert event.origin_index < event.raise_index


def test_skipping_harmony_on_clean_replays_changes_nothing(tmp_path: Path, vocab: Vocab) -> None:
    """Scan runs openai-harmony only where the replay finds something; --verify-clean runs it
    everywhere. Both must report the same events on generated clean and broken completions."""
    import random

    from tests.generators import mutate, well_formed

    rng = random.Random(11)
    lines = []
    for n in range(400):
        ids = vocab.encode(well_formed(rng))
        if n % 2:
            ids = mutate(ids, rng)
        lines.append(
            f"INFO 11-28 10:00:01 [logger.py:71] Generated response r{n}: output: '', "
            f"output_token_ids: {ids}, finish_reason: length"
        )
    (tmp_path / "outputs.log").write_text("\n".join(lines) + "\n")
    sources, _ = discover([str(tmp_path)])
    fast = scan(sources, ScanOptions())
    slow = scan(sources, ScanOptions(verify_clean=True))
    assert fast.events == slow.events
    assert len(fast.events) > 50  # the mutations broke plenty of them


def test_redact_hides_model_text(logs_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "events.jsonl"
    result = run(
        [
            "scan",
            "--redact",
            "--format",
            "json",
            "--by",
            "pattern",
            "--events",
            str(out),
            str(logs_dir),
        ]
    )
    everything = result.stdout + out.read_text()
    assert "refuse" not in everything
    assert "sha256:" in out.read_text()


def test_redact_hashes_single_word_roles_and_tokens(tmp_path: Path) -> None:
    """--redact hides every model-written string, single words included: an unknown role that
    is an e-mail address, the word harmony choked on; structure stays readable."""
    log = tmp_path / "x.log"
    log.write_text(
        "ERROR 11-27 10:00:01 openai_harmony.HarmonyError: Unknown role: alice@example.com\n"
        "ERROR 11-27 10:00:02 openai_harmony.HarmonyError: Unknown role: "
        "<|start|>bob@example.com\n"
        "ERROR 11-27 10:00:03 openai_harmony.HarmonyError: Unexpected token 12606 while "
        "expecting start token 200006\n"
    )
    out = tmp_path / "events.jsonl"
    by = ["--by", "pattern,code"]
    result = run(["scan", "-j", "1", "--redact", "-f", "json", *by, "--events", str(out), str(log)])
    everything = result.stdout + out.read_text()
    assert "alice" not in everything and "bob" not in everything
    assert '"comment"' not in out.read_text()
    assert "unexpected_token <text>" in everything and "<|start|>" in everything
    assert everything.count("sha256:") >= 3


def _summary(stamp: str, got: int = 3) -> str:
    return f"[{stamp}] Error in request: Expected 2 output messages (reasoning and final), but got {got}."


def _raise(got: int = 3) -> list[str]:
    return [
        "Traceback (most recent call last):",
        '  File "/opt/sglang/python/sglang/srt/entrypoints/openai/serving_chat.py", line 785, in f',
        "    raise ValueError(",
        f"ValueError: Expected 2 output messages (reasoning and final), but got {got}.",
    ]


def _codes(tmp_path: Path, lines: list[str]) -> list[tuple[int, str]]:
    (tmp_path / "a.log").write_text("\n".join(lines) + "\n")
    return [(e.line, e.code) for e in scan_folder(tmp_path).events]


def test_a_summary_and_its_tracebacks_raise_are_one_event_apart(tmp_path: Path) -> None:
    """An SGLang summary line, another record between, then the traceback whose raise it sums
    up: one failure, at the summary's line, its server named by the frames. With a separator a
    paste put between (grep's `--`) the extractor folds them as it folds adjacent ones."""
    lines = [_summary("2025-08-08 16:52:59"), "[2025-08-08 16:52:59] INFO x", *_raise()]
    (tmp_path / "a.log").write_text("\n".join(lines) + "\n")
    (event,) = scan_folder(tmp_path).events
    assert (event.line, event.code, event.traceback_line) == (1, "HD187", 3)
    assert event.server == "sglang"
    for between in (["--"], []):
        lines = [_summary("2025-08-08 16:52:59"), *between, *_raise()]
        (tmp_path / "a.log").write_text("\n".join(lines) + "\n")
        (event,) = scan_folder(tmp_path).events
        assert (event.line, event.code, event.traceback_line) == (1, "HD187", None)
        assert event.server == "sglang"


def test_two_failures_alike_each_with_its_traceback_stay_two(tmp_path: Path) -> None:
    """Summary, traceback, summary, traceback, alike in one second: each summary takes its own
    raise, two events. Two summaries alone stay two (nothing joins two summaries), and a
    summary of another count or another second is another failure."""
    stamp = "2025-08-08 16:52:59"
    between = [f"[{stamp}] INFO decode batch {n}" for n in range(5)]
    lines = [_summary(stamp), "--", *_raise(), *between, _summary(stamp), "--", *_raise()]
    assert _codes(tmp_path, lines) == [(1, "HD187"), (12, "HD187")]
    two = [_summary(stamp), "--", _summary(stamp)]
    assert _codes(tmp_path, two) == [(1, "HD187"), (3, "HD187")]
    lines = [_summary(stamp, got=3), "--", *_raise(got=4)]
    assert _codes(tmp_path, lines) == [(1, "HD187"), (6, "HD187")]
    lines = [_summary(stamp), "--", *_raise(), *between, _summary("2025-08-08 16:53:07")]
    assert _codes(tmp_path, lines) == [(1, "HD187"), (12, "HD187")]


def _llama_server(message: str, copy: str | None = None) -> list[str]:
    """A llama-server request failing with `message`, the client's `copy` of the error first."""
    body = json.dumps({"error": {"code": 500, "message": message, "type": "server_error"}})
    copied = json.dumps({"error": {"code": 500, "message": copy, "type": "server_error"}})
    return [
        *([copied] if copy is not None else []),
        "srv  update_slots: all slots are idle",
        f"srv    operator(): got exception: {body}",
        "srv  log_server_r: done request: POST /v1/chat/completions 127.0.0.1 500",
    ]


def test_a_parse_failure_over_another_familys_markup_is_no_event(tmp_path: Path) -> None:
    """Mistral's `[TOOL_CALLS]` in a llama-server parse failure: not Harmony, so neither the
    failure nor the client's copy of it (which shows no markup) is an event; a gpt-oss failure
    of the same server later in the log is, and so is one with no markup at all."""
    mistral = 'Failed to parse input at pos 0: [TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}'
    copy = "Failed to parse input at pos 0"
    assert _codes(tmp_path, _llama_server(mistral, copy)) == []
    filler = [f"srv  update_slots: id {n} | all slots are idle" for n in range(250)]
    harmony = "Failed to parse input at pos 12: <|channel|>analysis<|message|>I think"
    lines = [*_llama_server(mistral, copy), *filler, *_llama_server(harmony)]
    assert [code for _, code in _codes(tmp_path, lines)] == ["HD183"]
    lines = [*_llama_server("Failed to parse input at pos 7: to=functions.f"), *filler]
    assert [code for _, code in _codes(tmp_path, lines)] == ["HD183"]


def test_an_events_message_is_bounded_with_what_is_left_out(tmp_path: Path) -> None:
    """A failing line of a mebibyte was written whole into every events table and held so by
    polars (ten such lines: 60 MiB of the scan's peak); an event's message is now its head and
    tail past findings.MAX_EVENT_TEXT, with the count of characters between."""
    import csv

    from harmony_doctor.scan.findings import MAX_EVENT_TEXT

    element = "x" * (1 << 20)
    log = tmp_path / "long.log"
    log.write_text(
        "(APIServer pid=9) ERROR 03-14 08:09:10 [serving.py:830] openai_harmony.HarmonyError: "
        f'unexpected tokens remaining in message header: ["{element}"]\n'
    )
    events = tmp_path / "events.csv"
    result = run(["scan", str(log), "--events", str(events)])
    assert result.exit_code == 1, result.stderr
    csv.field_size_limit(1 << 24)
    with events.open(newline="") as f:
        (row,) = list(csv.DictReader(f))
    message = row["message"]
    assert len(message) < MAX_EVENT_TEXT + 100
    assert message.startswith("unexpected tokens remaining in message header")
    left = int(message.split("… ")[1].split(" characters")[0].replace(",", ""))
    assert left == len(element) + len('unexpected tokens remaining in message header: [""]') - (
        len(message) - len(f"… {left:,} characters …")
    )


def test_a_role_word_travels_as_a_field_and_groups_one_cause_in_any_words(
    tmp_path: Path,
) -> None:
    """The role a header held was found again in each event's message (`Unknown role: X` only):
    another parser's words for the same fault (`invalid role: 'X'`) made a pattern apart. The
    reader's role word now travels with the record, and one role is one pattern."""
    log = tmp_path / "roles.log"
    log.write_text(
        "2026-11-27 10:00:01 ERROR openai_harmony.HarmonyError: Unknown role: assistantassistant\n"
        + "x\n" * 70
        + "2026-11-27 10:05:01 ERROR [engine] invalid role: 'assistantassistant'\n"
    )
    sources, _ = discover([str(log)])
    found = scan(sources, ScanOptions())
    assert len(found.events) == 2 and all(e.kind == "unknown_role" for e in found.events)
    patterns = {e.pattern for e in found.events}
    assert len(patterns) == 1 and "assistant" in patterns.pop(), found.events
