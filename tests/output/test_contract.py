"""explain's JSON contract (output/contract.py) renders a log failure's record: the facts of the
message (whether it is an openai-harmony parser error's) are read where the record is made
(logs/describe.py), not worked out again from the message here (issue 35: output decides
nothing)."""

from __future__ import annotations

from dataclasses import replace

from harmony_doctor.logs.extract import extract_text
from harmony_doctor.output.contract import log_finding_record

_LINE = (
    "(APIServer pid=9) ERROR 03-14 08:09:10 [serving.py:830] openai_harmony.HarmonyError: "
    'unexpected tokens remaining in message header: Some("to=functions.a json")\n'
)


def test_the_harmony_error_is_the_records_fact() -> None:
    (error,) = extract_text(_LINE)
    assert error.harmony_error  # read when the record was made
    assert log_finding_record(error, None)["harmony_error"] == error.message
    # the record says otherwise: the contract follows the record, not the message's wording
    assert log_finding_record(replace(error, harmony_error=False), None)["harmony_error"] is None


def test_a_message_of_another_writer_is_no_harmony_error() -> None:
    (error,) = extract_text(
        "ERROR 2026-03-14 08:09:10 [engine] Failed to parse tool call: expected ',' at 12\n"
    )
    assert not error.harmony_error
    assert log_finding_record(error, None)["harmony_error"] is None


def test_the_rule_text_is_looked_up_at_rendering_not_copied_into_the_record() -> None:
    """A failure's title, cause and fix are its code's (faults/rules.py): the record holds the
    code, and what shows it looks the text up (issue 35: each LogError held a copy)."""
    from dataclasses import fields

    from harmony_doctor.faults.rules import RULES
    from harmony_doctor.models import LogError

    assert not {"title", "cause", "fix"} & {f.name for f in fields(LogError)}
    (error,) = extract_text(_LINE)
    record = log_finding_record(error, None)
    rule = RULES[error.code]
    assert (record["title"], record["cause"], record["fix"]) == (rule.title, rule.cause, rule.fix)
