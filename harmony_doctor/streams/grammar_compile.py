"""llguidance's compile of a grammar, kept from crashing the process: a size check of a Lark
grammar's rules first, and the compile itself run on a thread with a deep stack.

llguidance walks a grammar's rules recursively in Rust: a chain of rules, each naming the next,
overflows the stack past a few thousand rules (a 5,000-rule chain of 84 KB killed `explain
--grammar-file` with SIGSEGV, nothing on stderr). Rust cannot turn that into an error, so it
must not happen: grammars of more than MAX_GRAMMAR_RULES rules are refused before llguidance
sees them, and what is compiled runs on a stack of COMPILE_STACK, about thirty times what
MAX_GRAMMAR_RULES needs (a chain of 50,000 rules compiles on 256 MiB; 2,000 on the usual 8).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from typing import TypeVar

from harmony_doctor.errors import GrammarEngineError
from harmony_doctor.lazy_regex import Pattern

T = TypeVar("T")

MAX_GRAMMAR_RULES = 4_096
COMPILE_STACK = 128 << 20  # virtual: only the pages a compile touches are ever used

# A rule or terminal definition of llguidance's Lark: at a line's start, `name:`, with the
# `?`/`!` prefixes, a `.priority` and `[attributes]` it may carry. Counting every line that
# looks like one can only count more rules than there are, never fewer.
_DEFINITION = Pattern(r"^[ \t]*[?!]?[A-Za-z_]\w*(?:\.-?\d+)?(?:\[[^\]\n]*\])?[ \t]*:", re.M)

_STACK_LOCK = threading.Lock()  # threading.stack_size is the process's, for threads to come


def refuse_large_lark(text: str) -> None:
    """GrammarEngineError for a Lark grammar with more rules than llguidance is given."""
    rules = sum(1 for _ in _DEFINITION.finditer(text))
    if rules > MAX_GRAMMAR_RULES:
        raise GrammarEngineError(
            f"the grammar has {rules:,} rules: more than the {MAX_GRAMMAR_RULES:,} llguidance "
            "is given here, as a long chain of rules overflows its compiler's stack"
        )


def on_a_deep_stack(compile_step: Callable[[], T]) -> T:
    """`compile_step()` run on a thread whose stack is COMPILE_STACK; its result or its error."""
    outcome: list[T] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            outcome.append(compile_step())
        except BaseException as exc:  # handed to the calling thread, raised there
            failure.append(exc)

    with _STACK_LOCK:
        previous = threading.stack_size(COMPILE_STACK)
        try:
            thread = threading.Thread(target=run, name="llguidance-compile", daemon=True)
            thread.start()
        finally:
            threading.stack_size(previous)
    thread.join()
    if failure:
        raise failure[0]
    return outcome[0]
