"""What `explain` of a server log builds and loads at start-up (its latency is benchmarked in
benchmarks/startup.py, `explain traceback`, never asserted here): only what the log's failures
need, in a fresh process as the command line runs it, and the same output as before."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path
from typing import Any

from harmony_doctor.harmony.vocab import FIRST_SPECIAL, VOCAB_SIZE
from harmony_doctor.logs import extract_text
from harmony_doctor.output.explain_view import _log_token, names_need_vocab

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
TRACEBACK = str(SAMPLES / "vllm-traceback.log")


def _after_explain(probe: str, args: list[str] | None = None) -> Any:
    """The value of the expression `probe` in a fresh process after `harmony-doctor explain`
    (of the traceback sample unless `args` say otherwise) wrote to a pipe."""
    code = (
        "import sys\n"
        "from harmony_doctor.cli import app as cli\n"
        f"try:\n    cli.main({['explain', *(args or [TRACEBACK])]!r})\n"
        "except SystemExit:\n    pass\n"
        f"print(repr({probe}), file=sys.stderr)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return ast.literal_eval(out.stderr.strip().splitlines()[-1])


_VOCABS_LOADED = "len(sys.modules['harmony_doctor.harmony.vocab']._CACHE)"


def test_a_log_whose_tokens_are_special_is_shown_without_the_vocabulary() -> None:
    """The traceback's HD111 names <|return|> (200002): its name needs no vocabulary (reading
    and verifying the 3.6 MB file costs about 8 ms); JSON, which gives every token's text
    and re-tokenizes header words, still loads it."""
    assert names_need_vocab(extract_text(Path(TRACEBACK).read_text())) is False
    assert _after_explain(_VOCABS_LOADED) == 0
    assert _after_explain(_VOCABS_LOADED, [TRACEBACK, "--format", "json"]) == 1


def test_a_special_token_is_named_alike_with_and_without_the_vocabulary(vocab: Any) -> None:
    for token in range(FIRST_SPECIAL, VOCAB_SIZE + 1):
        named, bare = _log_token(token, vocab), _log_token(token, None)
        assert (named.plain, named.spans) == (bare.plain, bare.spans), token


def test_an_ordinary_token_of_a_log_needs_the_vocabulary() -> None:
    log = (
        "ERROR 11-27 10:00:05 [serving_chat.py:1145] openai_harmony.HarmonyError: "
        "Unexpected token 12606 while expecting start token 200006\n"
    )
    errors = extract_text(log)
    assert [e.token for e in errors] == [12606]
    assert names_need_vocab(errors)
