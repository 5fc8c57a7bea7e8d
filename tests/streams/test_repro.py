"""streams/repro.py: delta debugging keeps the failure, and the bundle's repro.py fails as described."""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

import harmony_doctor
from harmony_doctor.cli.explain import next_commands
from harmony_doctor.cli.reading import InputArgs
from harmony_doctor.errors import InputError
from harmony_doctor.harmony.vocab import VOCAB_SHA256, Vocab
from harmony_doctor.inputs import tokens as ingest
from harmony_doctor.streams.repro import failure_kind, failure_shape, shrink
from tests import generators
from tests.helpers import SAMPLES, run

SEED = SAMPLES / "seed-multiturn-completion.json"


def _fails_the_same_way(vocab: Vocab, tokens: Sequence[int], reference: str, role: str) -> bool:
    error = vocab.harmony_error(tokens, role, strict=True)  # type: ignore[arg-type]
    return error is not None and (failure_kind(error), failure_shape(error)) == (
        failure_kind(reference),
        failure_shape(reference),
    )


# --- shapes ----------------------------------------------------------------------------------


def test_shape_masks_variable_words_and_keeps_token_ids() -> None:
    assert (
        failure_shape('unexpected tokens remaining in message header: Some("a b \\"c\\"")')
        == 'unexpected tokens remaining in message header: Some("…")'
    )
    assert failure_shape('unexpected tokens remaining in message header: ["a", "b"]') == (
        'unexpected tokens remaining in message header: ["…", "…"]'
    )
    assert failure_shape("Unknown role: assistantassistant") == "Unknown role: …"
    message = "Unexpected token 200002 while expecting start token 200006"
    assert failure_shape(message) == message
    assert failure_kind(message) == "unexpected_token"


# --- shrinking -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["seed-multiturn-completion.json", "duplicate-recipient.ids", "ignore-eos.json"]
)
def test_samples_shrink_to_one_minimal_streams(vocab: Vocab, name: str) -> None:
    tokens = ingest.parse_tokens((SAMPLES / name).read_text(), vocab.encode).tokens
    result = shrink(tokens, vocab, "assistant")
    assert not result.exhausted
    assert len(result.minimal) <= len(tokens)
    assert _fails_the_same_way(vocab, result.minimal, result.original_error, "assistant")
    assert result.minimal_error == vocab.harmony_error(result.minimal, "assistant", strict=True)
    # 1-minimal: dropping any single token loses the failure.
    for i in range(len(result.minimal)):
        smaller = result.minimal[:i] + result.minimal[i + 1 :]
        assert not _fails_the_same_way(vocab, smaller, result.original_error, "assistant")


def _failing_stream(vocab: Vocab, seed: int) -> list[int]:
    rng = random.Random(seed)
    while True:
        tokens = vocab.encode(generators.well_formed(rng))
        for _ in range(3):
            tokens = generators.mutate(tokens, rng)
            if vocab.harmony_error(tokens, "assistant", strict=True) is not None:
                return tokens


@pytest.mark.parametrize("seed", range(40))
def test_generated_failing_streams_still_fail_the_same_way(vocab: Vocab, seed: int) -> None:
    tokens = _failing_stream(vocab, seed)
    result = shrink(tokens, vocab, "assistant")
    assert len(result.minimal) <= len(tokens)
    assert _fails_the_same_way(vocab, result.minimal, result.original_error, "assistant")
    assert result.kind == failure_kind(result.original_error)


def test_budget_stops_early_but_keeps_a_failing_stream(vocab: Vocab) -> None:
    tokens = ingest.parse_tokens(SEED.read_text(), vocab.encode).tokens
    result = shrink(tokens, vocab, "assistant", budget=3)
    assert result.exhausted
    assert _fails_the_same_way(vocab, result.minimal, result.original_error, "assistant")


def test_clean_stream_has_nothing_to_reproduce(vocab: Vocab) -> None:
    tokens = ingest.parse_tokens(
        (SAMPLES / "tool-call.harmony.txt").read_text(), vocab.encode
    ).tokens
    with pytest.raises(InputError, match="nothing to reproduce"):
        shrink(tokens, vocab, "assistant")


# --- the bundle ------------------------------------------------------------------------------


def _run_script(script: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """repro.py in a fresh interpreter, far from the bundle, with downloads made impossible."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TIKTOKEN", "HTTP", "HTTPS"))}
    cache = tmp_path / "empty-cache"
    cache.mkdir(exist_ok=True)
    env |= {
        "TIKTOKEN_RS_CACHE_DIR": str(cache),  # no cached vocabulary to fall back on
        "HTTP_PROXY": "http://127.0.0.1:9",  # and any download would fail at once
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "NO_PROXY": "",
    }
    return subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_bundle_repro_script_fails_exactly_as_described(tmp_path: Path) -> None:
    out = tmp_path / "bundle"
    result = run(["repro", str(SEED), "-o", str(out), "-f", "json"])
    assert result.exit_code == 0, result.stderr
    record = json.loads(result.stdout)
    assert sorted(p.name for p in out.iterdir()) == [
        "ISSUE.md",
        "repro.py",
        "tokens.json",
        "versions.json",
        "vocab",
    ]
    minimal = json.loads((out / "tokens.json").read_text())
    assert minimal == record["minimal"] and len(minimal) <= record["original_tokens"]
    copied = (out / "vocab" / "o200k_base.tiktoken").read_bytes()
    assert hashlib.sha256(copied).hexdigest() == VOCAB_SHA256

    proc = _run_script(out / "repro.py", tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last == f"openai_harmony.HarmonyError: {record['minimal_error']}"
    assert "harmony_doctor" not in (out / "repro.py").read_text().replace("harmony-doctor", "")

    issue = (out / "ISSUE.md").read_text()
    assert record["minimal_error"] in issue
    assert "## Expected" in issue and "## Actual" in issue
    assert "left the format at token" in issue
    versions = json.loads((out / "versions.json").read_text())
    assert versions["openai-harmony"] == record["harmony_version"]


def test_bundle_without_vocab_copy_points_at_the_bundled_file(tmp_path: Path) -> None:
    out = tmp_path / "bundle"
    result = run(["repro", str(SAMPLES / "ignore-eos.json"), "-o", str(out), "--no-copy-vocab"])
    assert result.exit_code == 0, result.stderr
    assert not (out / "vocab").exists()
    proc = _run_script(out / "repro.py", tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1] == (
        "openai_harmony.HarmonyError: Unexpected token 200002 while expecting start token 200006"
    )


def test_lenient_bundle_reproduces_under_strict_false(tmp_path: Path, vocab: Vocab) -> None:
    out = tmp_path / "bundle"
    sample = SAMPLES / "duplicate-recipient.ids"
    result = run(["repro", str(sample), "-o", str(out), "--lenient", "-f", "json"])
    assert result.exit_code == 0, result.stderr
    record = json.loads(result.stdout)
    assert record["strict"] is False
    assert "strict=False" in (out / "repro.py").read_text()
    assert (
        vocab.harmony_error(record["minimal"], "assistant", strict=False)
        == (record["minimal_error"])
    )
    proc = _run_script(out / "repro.py", tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1].endswith(record["minimal_error"])


def test_repro_script_exits_zero_once_the_stream_parses(tmp_path: Path) -> None:
    out = tmp_path / "bundle"
    assert run(["repro", str(SAMPLES / "ignore-eos.json"), "-o", str(out)]).exit_code == 0
    script = (out / "repro.py").read_text()
    fixed = script.replace("TOKENS = [200008, 200007, 200002]", "TOKENS = [200008, 200007]")
    assert fixed != script
    (out / "repro.py").write_text(fixed)
    proc = _run_script(out / "repro.py", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("not reproduced")


def test_cli_clean_input_is_a_one_line_error(tmp_path: Path) -> None:
    result = run(["repro", str(SAMPLES / "tool-call.harmony.txt"), "-o", str(tmp_path / "x")])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and "nothing to reproduce" in result.stderr
    assert not (tmp_path / "x").exists()


def test_next_commands_quote_and_carry_the_input_options() -> None:
    given = InputArgs("my log.txt", "text", "vllm-log", "req-1", None, "auto", None)
    assert next_commands(given, "none") == [
        "harmony-doctor recover 'my log.txt' --role none --input-format vllm-log --request req-1",
        "harmony-doctor repro 'my log.txt' --role none --input-format vllm-log --request req-1 "
        "-o harmony-repro",
    ]


def test_explain_ends_with_recover_and_repro_commands() -> None:
    result = run(["explain", str(SEED)])
    assert result.exit_code == 1
    assert result.stdout.rstrip().splitlines()[-2:] == [
        f"harmony-doctor recover {SEED}",
        f"harmony-doctor repro {SEED} -o harmony-repro",
    ]
    clean = run(["explain", str(SAMPLES / "tool-call.harmony.txt")])
    assert "harmony-doctor recover" not in clean.stdout


def test_explain_lenient_hint_reproduces_lenient(tmp_path: Path) -> None:
    sample = SAMPLES / "duplicate-recipient.ids"
    result = run(["explain", "--lenient", str(sample)])
    assert result.exit_code == 1
    assert result.stdout.rstrip().splitlines()[-1] == (
        f"harmony-doctor repro {sample} --lenient -o harmony-repro"
    )


def test_repro_bundle_holds_no_absolute_local_path(tmp_path: Path) -> None:
    """ISSUE.md names the input by its file name; repro.py finds the vocabulary without a path
    of this machine, with or without a copy beside it."""
    for copy in ("--copy-vocab", "--no-copy-vocab"):
        out = tmp_path / copy
        source = tmp_path / "private-folder" / "ignore-eos.json"
        source.parent.mkdir(exist_ok=True)
        source.write_bytes((SAMPLES / "ignore-eos.json").read_bytes())
        assert run(["repro", str(source), "-o", str(out), copy]).exit_code == 0
        for name in ("ISSUE.md", "repro.py", "versions.json", "tokens.json"):
            text = (out / name).read_text()
            assert str(tmp_path) not in text and "private-folder" not in text, name
            assert str(Path(harmony_doctor.__file__).parent) not in text, name
