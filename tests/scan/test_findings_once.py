"""findings.merge_duplicates: a logged error folds into the replay of the same completion only,
one for one; scan's rates count each failed request once."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harmony_doctor.models import ScanEvent
from harmony_doctor.scan.findings import (
    MERGE_WINDOW,
    _folded,
    _reports,
    _with_the_rest,
    merge_duplicates,
)
from tests.helpers import SAMPLES, run

UNEXPECTED = "Unexpected token 200002 while expecting start token 200006"


def _event(source: str, line: int, pid: int | None = 5, **fields: object) -> ScanEvent:
    event = ScanEvent(
        file="a.log",
        line=line,
        timestamp=None,
        pid=pid,
        server="vllm",
        harmony_version=">=0.0.5" if source == "log" else None,
        kind="unexpected_token",
        code="HD111",
        severity="error",
        pattern="unexpected_token 200002 <|return|>",
        token_id=200002,
        token_text="<|return|>",
        header_remainder=None,
        message=UNEXPECTED,
        source="log" if source == "log" else "replay",
    )
    return replace(event, **fields)  # type: ignore[arg-type]


def _shown(events: list[ScanEvent]) -> list[tuple[str, int]]:
    return [(e.source, e.line) for e in merge_duplicates(events)]


def test_error_logged_after_the_completion_is_its_report() -> None:
    merged = merge_duplicates([_event("replay", 10), _event("log", 17)])
    assert [(e.source, e.line, e.harmony_version) for e in merged] == [("replay", 17, ">=0.0.5")]


def test_error_logged_before_the_completion_is_another_failure() -> None:
    assert _shown([_event("log", 4), _event("replay", 10)]) == [("log", 4), ("replay", 10)]


def test_error_logged_far_after_the_completion_is_another_failure() -> None:
    far = 10 + MERGE_WINDOW + 1
    assert _shown([_event("replay", 10), _event("log", far)]) == [("replay", 10), ("log", far)]


@pytest.mark.parametrize(
    "other",
    [{"pid": 6}, {"request_id": "chatcmpl-2"}, {"token_id": 200007}, {"kind": "unknown_role"}],
)
def test_another_process_request_or_fault_is_another_failure(other: dict[str, object]) -> None:
    replayed = _event("replay", 10, request_id="chatcmpl-1")
    logged = replace(_event("log", 12), **other)  # type: ignore[arg-type]
    assert len(merge_duplicates([replayed, logged])) == 2


def test_one_for_one_nearest_first() -> None:
    # Two completions with the same fault and two errors logged after them: two failures, each
    # completion with the error that follows it.
    events = [_event("replay", 10), _event("replay", 20), _event("log", 15), _event("log", 25)]
    assert _shown(events) == [("replay", 15), ("replay", 25)]
    first, second = _event("replay", 10, request_id="r1"), _event("replay", 20, request_id="r2")
    merged = merge_duplicates([first, second, events[3], events[2]])
    assert [(e.request_id, e.line) for e in merged] == [("r1", 15), ("r2", 25)]
    # One error logged for two completions: one of them was not reported, both failed.
    assert _shown(events[:3]) == [("replay", 15), ("replay", 20)]
    # Two errors logged after one completion: the second is another failure.
    assert _shown([events[0], events[2], events[3]]) == [("replay", 15), ("log", 25)]


def test_warnings_are_never_folded() -> None:
    warning = _event("replay", 10, severity="warning", kind="unknown_channel", token_id=None)
    assert len(merge_duplicates([warning, _event("log", 12, token_id=None)])) == 2


def _merged_by_the_rule(events: list[ScanEvent]) -> list[ScanEvent]:
    """merge_duplicates' rule as its docstring says it, through every logged error: the
    reference the windowed search is compared with."""
    logged = sorted((e for e in events if e.source == "log"), key=lambda e: e.line)
    taken: set[int] = set()
    out = []
    for event in sorted(events, key=lambda e: e.line):
        if event.source != "replay" or event.severity != "error":
            continue
        index = next(
            (i for i, o in enumerate(logged) if i not in taken and _reports(o, event)), None
        )
        if index is None:
            out.append(event)
        else:
            taken.add(index)
            out.append(_folded(event, logged[index]))
    return _with_the_rest(out, events, {id(logged[i]) for i in taken})


_EVENTS = st.lists(
    st.builds(
        lambda source, line, pid, token, severity: _event(
            source, line, pid, token_id=token, severity=severity
        ),
        st.sampled_from(["log", "replay"]),
        st.integers(1, 3 * MERGE_WINDOW),
        st.sampled_from([None, 5, 6]),
        st.sampled_from([200002, 200003]),
        st.sampled_from(["error", "error", "warning"]),
    ),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(_EVENTS)
def test_the_windowed_search_folds_as_the_rule_says(events: list[ScanEvent]) -> None:
    assert merge_duplicates(events) == _merged_by_the_rule(events)


def test_each_of_many_completions_takes_its_own_error() -> None:
    # 20,000 completions each followed by its traceback (searched through every error, as the
    # rule is written, this took 2e8 steps: about two minutes).
    events = []
    for n in range(20_000):
        events += [_event("replay", 10 * n), _event("log", 10 * n + 3)]
    merged = merge_duplicates(events)
    assert [(e.source, e.line) for e in merged[:2]] == [("replay", 3), ("replay", 13)]
    assert len(merged) == 20_000


# --- through the CLI: rates that mean one thing ---------------------------------------------


def _totals(path: Path) -> dict[str, object]:
    out = run(["scan", "--format", "json", "--jobs", "1", str(path)])
    totals = json.loads(out.stdout)["totals"]
    assert isinstance(totals, dict)
    return totals


def test_ten_requests_failing_in_one_second_are_a_100_percent_rate(tmp_path: Path) -> None:
    prefix = "(APIServer pid=7) "
    lines = []
    for n in range(10):
        lines += [
            f"{prefix}INFO 11-28 10:15:03 [logger.py:43] Received request chatcmpl-{n}: x.",
            f"{prefix}ERROR 11-28 10:15:03 [serving_chat.py:1145] openai_harmony.HarmonyError: "
            + UNEXPECTED,
            f'{prefix}INFO:     10.0.0.2:5555 - "POST /v1/chat/completions HTTP/1.1" 500 Error',
        ]
    log = tmp_path / "vllm.log"
    log.write_text("\n".join(lines) + "\n")
    totals = _totals(log)
    assert (totals["failures"], totals["requests"], totals["rate"]) == (10, 10, 1.0)


# The samples that are logs (the others are token documents: doubled, a Harmony text or an id
# list is one longer stream, which may well be broken where the copies meet).
LOG_SAMPLES = sorted(p.name for p in SAMPLES.iterdir() if p.suffix in (".log", ".md"))


@pytest.mark.parametrize("name", [*LOG_SAMPLES, "error-bodies.txt"])
def test_scan_of_a_log_twice_finds_every_failure_twice(name: str, tmp_path: Path) -> None:
    text = (SAMPLES / name).read_text()
    (tmp_path / "once.log").write_text(text)
    (tmp_path / "twice.log").write_text(text + text)
    once, twice = _totals(tmp_path / "once.log"), _totals(tmp_path / "twice.log")
    assert twice["failures"] == 2 * once["failures"]  # type: ignore[operator]
