"""grammar_compile.py: llguidance compiles a user's grammar or refuses it, never crashes."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from harmony_doctor.errors import GrammarEngineError
from harmony_doctor.streams.grammar_compile import (
    MAX_GRAMMAR_RULES,
    on_a_deep_stack,
    refuse_large_lark,
)
from tests.helpers import REPO, SAMPLES

pytest.importorskip("llguidance")


def _chain(rules: int) -> str:
    """A Lark chain of `rules` rules, each naming the next (red team H11's deep.lark)."""
    body = "\n".join(f'a{i}: a{i + 1} "x"' for i in range(rules))
    return f'start: a0\n{body}\na{rules}: "y"\n'


def _explain_in_a_child(grammar: Path) -> subprocess.CompletedProcess[str]:
    """explain --grammar-file in its own process: a crash is a return code, not a lost worker."""
    ids = SAMPLES / "duplicate-recipient.ids"
    return subprocess.run(
        [sys.executable, "-m", "harmony_doctor", "explain", "--grammar-file", str(grammar), ids],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=REPO,
        env={**os.environ, "NO_COLOR": "1"},
    )


def test_a_5000_rule_chain_is_refused_in_one_line(tmp_path: Path) -> None:
    deep = tmp_path / "deep.lark"
    deep.write_text(_chain(5000))
    done = _explain_in_a_child(deep)
    assert done.returncode == 2, done.stderr  # was 139 (SIGSEGV), nothing on stderr
    assert done.stderr == (
        "harmony-doctor: error: the grammar has 5,002 rules: more than the 4,096 llguidance is "
        "given here, as a long chain of rules overflows its compiler's stack\n"
    )


@pytest.mark.parametrize("rules", [2000, 4000], ids=["worked-before", "main-stack-overflows"])
def test_a_chain_within_the_limit_is_compiled_and_checked(tmp_path: Path, rules: int) -> None:
    # 4,000 rules overflow the main thread's 8 MiB stack: only the deep stack compiles them.
    deep = tmp_path / "deep.lark"
    deep.write_text(_chain(rules))
    done = _explain_in_a_child(deep)
    assert done.returncode == 1, done.stderr
    assert "deep.lark (llguidance)" in done.stdout
    assert 'allowed there   1 token(s): "y"' in done.stdout


def test_every_form_of_a_definition_is_counted() -> None:
    forms = ["a: b", "?a: b", "!a: b", "a.2: b", "A.-1: b", "a[lazy]: b", "  TAB_9 : b"]
    per_form = MAX_GRAMMAR_RULES // len(forms) + 1
    text = "\n".join(f"{form.replace('a', f'a{i}', 1)}" for i in range(per_form) for form in forms)
    with pytest.raises(GrammarEngineError, match=r"has [\d,]+ rules"):
        refuse_large_lark(text)
    refuse_large_lark("\n".join(forms * (MAX_GRAMMAR_RULES // len(forms))))


def test_the_deep_stack_hands_back_results_and_errors() -> None:
    before = threading.stack_size()
    assert on_a_deep_stack(lambda: 42) == 42

    def fails() -> None:
        raise ValueError("from the compile thread")

    with pytest.raises(ValueError, match="from the compile thread"):
        on_a_deep_stack(fails)
    assert threading.stack_size() == before
