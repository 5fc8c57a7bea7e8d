"""Hour groups add up to the totals (issue 34 A, 8): a request or a failure before its file's
first stamp has no hour, and both land in the one unstamped group; none is credited to the
next stamped hour."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import run

ACCESS = 'INFO:     10.0.0.7:51234 - "POST /v1/chat/completions HTTP/1.1" 200 OK'
FAILURE = "openai_harmony.HarmonyError: Unknown role: x{n}"  # each its own failure

# A log as steps: a stamp line of an hour, an access line, or an access line and a failure
# (so that no hour logs more failures than requests: every group has a rate).
steps = st.lists(
    st.one_of(st.integers(10, 13), st.just("request"), st.just("failure")), min_size=1, max_size=12
)


def _log(plan: list[int | str]) -> tuple[str, dict[str | None, list[int]]]:
    """The log's text, and per hour ("10".."13", None before the first stamp) its requests and
    failures, as the model says they count."""
    lines: list[str] = []
    model: dict[str | None, list[int]] = {}
    hour: str | None = None
    for step in plan:
        if isinstance(step, int):
            hour = str(step)
            lines.append(f"INFO 11-28 {step}:15:01 [logger.py:71] tick")
            continue
        counts = model.setdefault(hour, [0, 0])
        lines.append(ACCESS)
        counts[0] += 1
        if step == "failure":
            stamp = f"ERROR 11-28 {hour}:20:00 " if hour else "ERROR "
            lines.append(stamp + FAILURE.format(n=len(lines)))
            counts[1] += 1
    return "\n".join(lines) + "\n", model


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(plan=steps)
def test_hour_groups_add_up_to_the_totals(tmp_path: Path, plan: list[int | str]) -> None:
    text, model = _log(plan)
    log = tmp_path / "app.log"
    log.write_text(text)
    result = run(["scan", "-j", "1", str(log), "--by", "hour", "--format", "json"])
    doc = json.loads(result.stdout)
    totals = doc["totals"]
    assert totals["requests"] == (sum(r for r, _ in model.values()) or None)
    assert totals["failures"] == sum(f for _, f in model.values())
    groups = {(g["hour"] or "")[-2:] or None: g for g in doc["groups"]}
    assert set(groups) == {h for h, (_, f) in model.items() if f}
    for hour, group in groups.items():
        assert (group["requests"], group["count"]) == tuple(model[hour]), hour
    assert sum(g["count"] for g in groups.values()) == totals["failures"]
