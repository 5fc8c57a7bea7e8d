"""`watch --alert-rules`: a rules file promtool accepts, with the thresholds asked for."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers import run


def test_rules_carry_the_thresholds() -> None:
    result = run(["watch", "--alert-rules", "--max-rate", "0.05", "--window", "30m"])
    assert result.exit_code == 0, result.stderr
    assert "> 0.05 and" in result.stdout
    assert "[30m]" in result.stdout
    for name in ("HarmonyFailureRateHigh", "HarmonyNewFailureCode", "HarmonyWatchDown"):
        assert f"alert: {name}" in result.stdout


def test_a_bad_duration_is_one_line() -> None:
    result = run(["watch", "--alert-rules", "--window", "15 minutes"])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1
    assert "--window" in result.stderr


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed")
@pytest.mark.parametrize("job", ["harmony-doctor-watch", 'odd "job" \\ name'])
def test_promtool_accepts_the_rules(tmp_path: Path, job: str) -> None:
    result = run(["watch", "--alert-rules", "--job", job])
    rules = tmp_path / "rules.yml"
    rules.write_text(result.stdout)
    checked = subprocess.run(
        ["promtool", "check", "rules", str(rules)], capture_output=True, text=True, check=False
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "3 rules found" in checked.stdout
