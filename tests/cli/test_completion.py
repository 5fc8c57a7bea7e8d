"""Issue 24: shell completion offers the rule codes for `rules HD1<Tab>`."""

from __future__ import annotations

import os
import subprocess
import sys

import harmony_doctor as hd


def _complete(words: str) -> list[str]:
    """What bash completion offers for the last of `words` (the line typed so far)."""
    env = dict(
        os.environ,
        _HARMONY_DOCTOR_COMPLETE="complete_bash",
        COMP_WORDS=words,
        COMP_CWORD=str(len(words.split()) - 1),
    )
    code = "from harmony_doctor.cli.app import main\nmain()\n"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False
    )
    return out.stdout.split()


def test_rules_completes_codes_by_prefix() -> None:
    offered = _complete("harmony-doctor rules HD1")
    expected = [r.code for r in hd.list_rules() if r.code.startswith("HD1")]
    assert offered == expected
    assert offered and all(code.startswith("HD1") for code in offered)


def test_rules_completion_narrows_to_one_code() -> None:
    first = hd.list_rules()[0].code
    assert _complete(f"harmony-doctor rules {first}") == [first]
    assert _complete("harmony-doctor rules HX") == []
