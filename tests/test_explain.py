"""explain.py: the decision between a log and a token stream, and what each reports."""

from __future__ import annotations

import json

import pytest

from harmony_doctor.errors import InputError
from harmony_doctor.explain import LogExplanation, explain_text
from harmony_doctor.harmony.vocab import Vocab
from harmony_doctor.models import Diagnosis
from tests.helpers import SAMPLES, run

TRACEBACK = (SAMPLES / "vllm-traceback.log").read_text()
REQUESTS = (SAMPLES / "vllm-requests.log").read_text()


@pytest.mark.parametrize("body", ["null", "[]", "{}", '""', "\ufeffnull\n"])
def test_null_or_empty_json_is_nothing_to_read(body: str) -> None:
    with pytest.raises(InputError, match="nothing to read"):
        explain_text(body)
    result = run(["explain", "-"], body)
    assert result.exit_code == 2 and "nothing to read" in result.stderr


def test_text_without_anything_harmony_is_not_called_ok() -> None:
    found = explain_text("hello world, nothing to see here\n")
    assert isinstance(found, LogExplanation) and not found.errors and not found.related
    result = run(["explain", "-"], "hello world, nothing to see here\n")
    assert "NOTHING HARMONY-RELATED" in result.stdout and "OK" not in result.stdout
    record = json.loads(run(["explain", "-f", "json", "-"], "hello world\n").stdout)
    assert record["input"]["harmony_related"] is False


def test_a_clean_server_log_is_ok() -> None:
    lines = REQUESTS.splitlines()
    clean = "\n".join(x for x in lines if "token_ids" not in x and "Error" not in x)
    found = explain_text(clean)
    assert isinstance(found, LogExplanation) and found.related and not found.errors


def test_log_with_tracebacks_and_output_ids_is_a_log_with_its_completions_replayed(
    vocab: Vocab,
) -> None:
    found = explain_text(TRACEBACK + REQUESTS, vocab)
    assert isinstance(found, LogExplanation)
    alone = [
        explain_text(TRACEBACK, input_format="log"),
        explain_text(REQUESTS, input_format="log"),
    ]
    codes = [e.code for part in alone if isinstance(part, LogExplanation) for e in part.errors]
    assert [e.code for e in found.errors] == codes
    replayed = {d.input.request_id: d.verdict for d in found.completions}
    assert replayed and "fault" in replayed.values()
    record = json.loads(run(["explain", "-f", "json", "-"], TRACEBACK + REQUESTS).stdout)
    assert len(record["completions"]) == len(found.completions)
    assert record["verdict"] == "fault"


def test_input_format_log_forces_log_mode(vocab: Vocab) -> None:
    ids = "[200005, 35644, 200008, 12194, 200007]"
    assert isinstance(explain_text(ids, vocab), Diagnosis)
    forced = explain_text(ids, vocab, input_format="log")
    assert isinstance(forced, LogExplanation) and not forced.errors


def test_open_stream_skips_the_end_of_stream_check(vocab: Vocab) -> None:
    partial = "<|start|>assistant<|channel|>analysis<|message|>still thinking"
    closed = explain_text(partial, vocab, role="none")
    assert isinstance(closed, Diagnosis) and closed.verdict == "ok"  # content may end a stream
    header_cut = "<|start|>assistant<|channel|>analysis"
    cut = explain_text(header_cut, vocab, role="none")
    assert isinstance(cut, Diagnosis) and cut.verdict == "fault"
    still_open = explain_text(header_cut, vocab, role="none", open_stream=True)
    assert isinstance(still_open, Diagnosis) and still_open.verdict == "ok"
    assert run(["explain", "--role", "none", "--open", "-"], header_cut).exit_code == 0
