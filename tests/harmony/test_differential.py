"""Differential replay: our state machine against openai-harmony on generated streams.

For every well-formed and mutated stream, both roles, strict and lenient: the replay's fault
kind and raise index equal openai-harmony's, its messages equal the parser's, and the origin
never comes after the raise. HD_DEEP=1 (or HYPOTHESIS_PROFILE=deep) runs 100,000 streams.
"""

from __future__ import annotations

import os
import random
from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harmony_doctor import native as accel
from harmony_doctor.faults.catalogue import kind_of_error
from harmony_doctor.harmony.replay import replay
from harmony_doctor.harmony.vocab import FIRST_SPECIAL, MESSAGE, Vocab
from harmony_doctor.models import Message, TokenInput
from harmony_doctor.streams.clean import CleanStreams, clean_key, clean_key_reference
from harmony_doctor.streams.diagnose import diagnose, replay_is_clean
from tests.generators import mutate, well_formed

DEEP = os.environ.get("HD_DEEP") == "1" or os.environ.get("HYPOTHESIS_PROFILE") == "deep"
STREAMS = 100_000 if DEEP else 1_500
PROMPT = "<|start|>system<|message|>You are a helpful assistant.<|end|><|start|>user<|message|>Hi<|end|><|start|>assistant"


def _ours(m: Message) -> dict[str, Any]:
    return {
        "role": m.role,
        "name": m.name,
        "channel": m.channel,
        "recipient": m.recipient,
        "content_type": m.content_type,
        "text": m.text,
    }


def _streams(vocab: Vocab, count: int, seed: int) -> list[list[int]]:
    rng = random.Random(seed)
    out: list[list[int]] = []
    for _ in range(count):
        tokens = vocab.encode(well_formed(rng))
        for _ in range(rng.choice((0, 0, 1, 1, 2, 3))):
            tokens = mutate(tokens, rng)
        out.append(tokens)
    return out


def _check(vocab: Vocab, tokens: list[int], role: str, strict: bool) -> str | None:
    """None when replay and openai-harmony agree; otherwise what differs."""
    walk = replay(tokens, vocab, role, strict)  # type: ignore[arg-type]
    truth = vocab.harmony_parse(tokens, role, strict)  # type: ignore[arg-type]
    ours = (walk.fault.kind, walk.fault.raise_index) if walk.fault else (None, None)
    theirs = (kind_of_error(truth.error), truth.raise_index) if truth.error else (None, None)
    if ours != theirs:
        return f"fault {ours} != harmony {theirs} ({truth.error})"
    expected = list(truth.messages)
    got = [_ours(m) for m in walk.messages]
    if got != expected:
        return f"messages differ: {got} != {expected}"
    if walk.fault and walk.origin_index is not None and walk.origin_index > walk.fault.raise_index:
        return f"origin {walk.origin_index} after raise {walk.fault.raise_index}"
    return None


@pytest.mark.parametrize("strict", [True, False], ids=["strict", "lenient"])
@pytest.mark.parametrize("role", ["assistant", "none"])
def test_replay_agrees_with_openai_harmony(vocab: Vocab, role: str, strict: bool) -> None:
    prefix = vocab.encode(PROMPT) if role == "none" else []
    failures: list[str] = []
    verdicts: Counter[str] = Counter()
    for tokens in _streams(vocab, STREAMS, seed=20261130):
        stream = prefix + tokens
        problem = _check(vocab, stream, role, strict)
        if problem:
            failures.append(f"{stream}: {problem}")
        walk_fault = replay(stream, vocab, role, strict).fault  # type: ignore[arg-type]
        verdicts[walk_fault.kind if walk_fault else "ok"] += 1
    assert not failures, f"{len(failures)} disagreements, first: {failures[0][:2000]}"
    # The generator must exercise both verdicts and several kinds, or the test proves little.
    assert verdicts["ok"] > STREAMS // 10
    assert sum(v for k, v in verdicts.items() if k != "ok") > STREAMS // 10
    assert len(verdicts) >= 4, verdicts


def test_well_formed_streams_have_no_origin(vocab: Vocab) -> None:
    rng = random.Random(7)
    for _ in range(300 if not DEEP else 20_000):
        tokens = vocab.encode(well_formed(rng))
        walk = replay(tokens, vocab, "assistant")
        assert walk.fault is None and walk.origin_index is None, vocab.decode(tokens)


def test_diagnose_lenient_messages_equal_the_lenient_parser(vocab: Vocab) -> None:
    for tokens in _streams(vocab, 400 if not DEEP else 20_000, seed=99):
        d = diagnose(TokenInput(tuple(tokens), "tokens", "ids"), vocab, "assistant")
        lenient = vocab.harmony_parse(tokens, "assistant", strict=False)
        assert d.lenient_messages == lenient.messages
        assert d.lenient_error == lenient.error
        assert not d.disagreements, d.disagreements


@pytest.mark.parametrize("role", ["assistant", "none"])
def test_clean_key_keeps_the_clean_verdict(vocab: Vocab, role: str) -> None:
    """Cutting message content to one token (what scan memoises by) never changes whether our
    replay finds the stream clean; the streams include special tokens inside content."""
    prefix = vocab.encode(PROMPT) if role == "none" else []
    verdicts: Counter[bool] = Counter()
    shortened = 0
    for tokens in _streams(vocab, STREAMS, seed=20261201):
        stream = prefix + tokens
        key = clean_key(stream)
        shortened += len(key) < len(stream)
        verdict = replay_is_clean(stream, vocab, role)  # type: ignore[arg-type]
        assert replay_is_clean(key, vocab, role) == verdict, stream  # type: ignore[arg-type]
        verdicts[verdict] += 1
    assert verdicts[True] > STREAMS // 10 and verdicts[False] > STREAMS // 10, verdicts
    assert shortened > STREAMS // 2


def test_clean_streams_remember_by_key_and_stay_bounded(vocab: Vocab) -> None:
    clean = CleanStreams(vocab, "assistant", size=8)
    for tokens in _streams(vocab, 200, seed=5):
        assert clean(tokens) == replay_is_clean(tokens, vocab, "assistant")
        assert len(clean.known) <= 8
    said = vocab.encode("<|channel|>final<|message|>one thing<|return|>")
    other = vocab.encode("<|channel|>final<|message|>quite another thing to say<|return|>")
    assert clean_key(said) == clean_key(other)


@settings(max_examples=1500, deadline=None)
@given(
    st.lists(
        st.sampled_from([200005, 200006, 200007, 200008, 200002, 200012, 200003, 199998])
        | st.integers(0, 199_997)
        | st.integers(200_000, 201_087),
        max_size=60,
    )
)
def test_native_clean_key_equals_the_reference(tokens: list[int]) -> None:
    native = accel.native_module()
    if native is None:
        pytest.skip("the Rust extension is not built")
    assert clean_key(tokens) == clean_key_reference(tokens)
    assert native.clean_key(tokens, FIRST_SPECIAL, MESSAGE) == clean_key_reference(tokens)


def test_clean_key_takes_the_reference_when_native_is_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(accel.NATIVE_ENV, "0")
    stream = [200005, 35644, 200008, 1, 2, 3, 200002]
    assert clean_key(stream) == (200005, 35644, 200008, 0, 200002)
