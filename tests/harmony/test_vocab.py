"""vocab.py: the bundled file, its hash, tiktoken and openai-harmony built from it offline."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from harmony_doctor.errors import VocabError
from harmony_doctor.harmony import vocab as vocab_module
from harmony_doctor.harmony.vocab import (
    VOCAB_SHA256,
    Vocab,
    harmony_special_tokens,
    load_vocab,
    locate_vocab,
)
from tests.helpers import shared


def test_bundled_file_has_the_published_hash() -> None:
    path = locate_vocab()
    assert path.name == "o200k_base.tiktoken"
    assert hashlib.sha256(path.read_bytes()).hexdigest() == VOCAB_SHA256


def test_bundled_file_matches_shared_sha256sums() -> None:
    sums = shared("vocab", "SHA256SUMS").read_text().split()
    assert sums[0] == VOCAB_SHA256


def test_special_tokens_match_tiktoken_definition(
    monkeypatch: pytest.MonkeyPatch, vocab: Vocab
) -> None:
    """tiktoken's own o200k_harmony constructor, fed our ranks instead of a download."""
    import tiktoken_ext.openai_public as public

    ranks = {piece: rank for rank, piece in enumerate(vocab._pieces)}
    monkeypatch.setattr(public, "load_tiktoken_bpe", lambda *a, **k: ranks)
    theirs = public.o200k_harmony()
    assert theirs["special_tokens"] == harmony_special_tokens()
    assert theirs["pat_str"] == vocab_module.O200K_PAT_STR


def test_tiktoken_and_harmony_encode_alike(vocab: Vocab) -> None:
    text = "<|start|>assistant<|channel|>final<|message|>Héllo, wörld! 你好 🙂<|return|>"
    ours = vocab.encode(text)
    theirs = vocab.harmony.encode(text, allowed_special="all")
    assert ours == list(theirs)
    assert vocab.decode(ours) == text


def test_token_bytes_of_specials_and_ordinary(vocab: Vocab) -> None:
    assert vocab.token_bytes(200006) == b"<|start|>"
    assert vocab.token_bytes(200099) == b"<|reserved_200099|>"
    assert vocab.token_bytes(12606) == b"comment"
    assert vocab.is_special(199998) and not vocab.is_special(199997)


def test_harmony_parse_reports_raise_index(vocab: Vocab) -> None:
    tokens = vocab.encode("<|channel|>final<|message|>ok<|end|><|return|>")
    outcome = vocab.harmony_parse(tokens, "assistant", strict=True)
    assert outcome.error == "Unexpected token 200002 while expecting start token 200006"
    assert outcome.raise_index == len(tokens) - 1
    assert outcome.messages[0]["channel"] == "final"
    assert outcome.messages[0]["text"] == "ok"


def test_eos_error_raises_at_len(vocab: Vocab) -> None:
    tokens = vocab.encode("<|channel|>analysis")
    outcome = vocab.harmony_parse(tokens, "assistant", strict=True)
    assert outcome.error is not None and "EOS" in outcome.error
    assert outcome.raise_index == len(tokens)


def test_tampered_file_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "o200k_base.tiktoken"
    data = bytearray(locate_vocab().read_bytes())
    data[100] ^= 1
    bad.write_bytes(bytes(data))
    with pytest.raises(VocabError, match="not o200k_base"):
        Vocab(bad)


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(VocabError, match="cannot read"):
        load_vocab(tmp_path / "nope.tiktoken")


def test_env_var_takes_precedence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TIKTOKEN_ENCODINGS_BASE", str(tmp_path))
    assert locate_vocab() == tmp_path / "o200k_base.tiktoken"
    assert locate_vocab(Path("/x/y.tiktoken")) == Path("/x/y.tiktoken")


def test_explicit_file_with_other_name_loads_harmony(tmp_path: Path) -> None:
    copy = tmp_path / "my-vocab.bin"
    copy.write_bytes(locate_vocab().read_bytes())
    loaded = Vocab(copy)
    outcome = loaded.harmony_parse(
        loaded.encode("<|channel|>final<|message|>hi"), "assistant", True
    )
    assert outcome.error is None


def test_harmony_loader_env_is_restored(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("TIKTOKEN_ENCODINGS_BASE", raising=False)
    copy = tmp_path / "o200k_base.tiktoken"
    copy.write_bytes(locate_vocab().read_bytes())
    Vocab(copy).harmony  # noqa: B018 - loading is the point
    import os

    assert "TIKTOKEN_ENCODINGS_BASE" not in os.environ


def test_cli_reports_tampered_vocab_in_one_line(tmp_path: Path) -> None:
    from tests.helpers import run

    bad = tmp_path / "o200k_base.tiktoken"
    bad.write_bytes(b"not a vocabulary\n")
    result = run(["decode", "--vocab", str(bad), "-"], "[1, 2, 3]")
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1
    assert "not o200k_base" in result.stderr
    assert "Traceback" not in result.stderr
