"""streams/recover.py: strict, lenient and our salvage side by side, with provenance."""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Sequence
from typing import Any

import pytest

from harmony_doctor.choices import ParseRole
from harmony_doctor.harmony.vocab import CHANNEL, RETURN, Vocab
from harmony_doctor.inputs import tokens as ingest
from harmony_doctor.models import Recovery, SalvagePiece, TokenInput
from harmony_doctor.streams.recover import received, recover
from tests import generators
from tests.helpers import SAMPLES, run

FIELDS = ("role", "name", "channel", "recipient", "content_type", "text")


def _input(tokens: Sequence[int]) -> TokenInput:
    return TokenInput(tokens=tuple(tokens), detected="tokens", format="json-array")


def _sample(name: str, vocab: Vocab) -> TokenInput:
    return ingest.parse_tokens((SAMPLES / name).read_text(), vocab.encode)


def _fields(piece: SalvagePiece) -> dict[str, Any]:
    return {f: getattr(piece, f) for f in FIELDS}


def _harmony_fields(message: dict[str, Any]) -> dict[str, Any]:
    return {f: message.get(f) for f in FIELDS}


def _check_invariants(rec: Recovery, vocab: Vocab) -> None:
    """What must hold for every stream, broken or not."""
    tokens = rec.input.tokens
    # strict and lenient are openai-harmony's own answers, untouched.
    for result, strict in ((rec.strict, True), (rec.lenient, False)):
        truth = vocab.harmony_parse(tokens, rec.role, strict)
        assert (result.error, result.raise_index, result.messages) == (
            truth.error,
            truth.raise_index,
            truth.messages,
        )
    # The messages strict parsing returned before its fault are the first salvaged pieces.
    for piece, message in zip(rec.pieces, rec.strict.messages, strict=False):
        assert piece.confidence == "certain"
        assert _fields(piece) == _harmony_fields(message)
    # Every `certain` piece is what openai-harmony parses from exactly its span.
    for piece in rec.pieces:
        if piece.confidence != "certain":
            continue
        lo, hi = piece.span
        # Only the very first message of a completion starts inside its header.
        role: ParseRole = "assistant" if lo == 0 and rec.role == "assistant" else "none"
        alone = vocab.harmony_parse(tokens[lo:hi], role, strict=True)
        assert alone.error is None
        assert [_harmony_fields(m) for m in alone.messages] == [_fields(piece)]
    # Spans are in order, inside the stream, and never overlap (skipped spans included).
    spans = sorted([p.span for p in rec.pieces] + [s.span for s in rec.skipped])
    for (lo, hi), (next_lo, _) in itertools.pairwise(spans):
        assert 0 <= lo < hi <= next_lo
    assert all(0 <= lo < hi <= len(tokens) for lo, hi in spans)


# --- clean streams ---------------------------------------------------------------------------


def test_clean_stream_is_all_certain_and_equals_harmony(vocab: Vocab) -> None:
    rec = recover(_sample("tool-call.harmony.txt", vocab), vocab, "assistant")
    _check_invariants(rec, vocab)
    assert rec.strict.error is None
    assert [p.confidence for p in rec.pieces] == ["certain", "certain"]
    assert [_fields(p) for p in rec.pieces] == [_harmony_fields(m) for m in rec.strict.messages]
    assert not rec.skipped
    assert rec.tool_call is not None
    assert (rec.tool_call.name, rec.tool_call.confidence) == ("get_weather", "certain")
    assert rec.tool_call.arguments_json and rec.tool_call.complete


@pytest.mark.parametrize("seed", range(30))
def test_generated_well_formed_streams_salvage_exactly_what_harmony_parses(
    vocab: Vocab, seed: int
) -> None:
    tokens = vocab.encode(generators.well_formed(random.Random(seed)))
    rec = recover(_input(tokens), vocab, "assistant")
    _check_invariants(rec, vocab)
    assert rec.strict.error is None
    assert all(p.confidence == "certain" for p in rec.pieces)
    assert [_fields(p) for p in rec.pieces] == [_harmony_fields(m) for m in rec.strict.messages]


# --- each recovery path ----------------------------------------------------------------------


def test_prose_header_seed_guesses_analysis_then_resyncs(vocab: Vocab) -> None:
    rec = recover(_sample("seed-multiturn-completion.json", vocab), vocab, "assistant")
    _check_invariants(rec, vocab)
    assert rec.strict.error is not None and rec.strict.messages == ()
    guessed, final = rec.pieces
    assert (guessed.confidence, guessed.channel, guessed.span) == ("guessed", "analysis", (0, 39))
    assert guessed.text == vocab.decode(rec.input.tokens[0:38])
    assert "guessed" in guessed.how
    # The final answer is what openai-harmony parses from the resync point on.
    after = vocab.harmony_parse(rec.input.tokens[39:], "none", strict=True)
    assert (final.confidence, final.span) == ("certain", (39, 56))
    assert [_fields(final)] == [_harmony_fields(m) for m in after.messages]
    assert rec.final == 1 and rec.analysis == (0,)
    # Lenient openai-harmony keeps the same final answer, without a channel on the prose.
    assert received(rec.lenient.messages).final == final.text


def test_duplicate_recipient_guesses_the_tool_call(vocab: Vocab) -> None:
    rec = recover(_sample("duplicate-recipient.ids", vocab), vocab, "assistant")
    _check_invariants(rec, vocab)
    assert rec.strict.error is not None and "to=functions.search" in rec.strict.error
    assert rec.pieces[0].confidence == "certain"
    call = rec.tool_call
    assert call is not None
    assert (call.confidence, call.recipient, call.name) == ("guessed", "functions.search", "search")
    assert json.loads(call.arguments) == {"q": "gpt-oss"}
    # openai-harmony (both modes) returns no tool call at all.
    assert received(rec.strict.messages).tool_recipient is None
    assert received(rec.lenient.messages).tool_recipient is None


def test_return_after_end_is_skipped_and_the_rest_kept(vocab: Vocab) -> None:
    rec = recover(_sample("ignore-eos.json", vocab), vocab, "assistant")
    _check_invariants(rec, vocab)
    assert "Unexpected token 200002" in (rec.strict.error or "")
    assert [p.confidence for p in rec.pieces] == ["certain", "certain"]
    assert [s.span for s in rec.skipped] == [(20, 21)]
    assert rec.final == 1 and rec.pieces[1].text == "Hello! How can I help?"


def test_text_after_call_is_read_as_a_headerless_tool_call(vocab: Vocab) -> None:
    text = (
        "<|channel|>analysis<|message|>think<|end|><|start|>assistant<|channel|>commentary "
        'to=functions.a <|constrain|>json<|message|>{"x": 1}<|call|>'
        "commentary to=functions.b <|constrain|>json<|message|>{}<|call|>"
    )
    tokens = vocab.encode(text)
    rec = recover(_input(tokens), vocab, "assistant")
    _check_invariants(rec, vocab)
    assert "Unexpected token 12606" in (rec.strict.error or "")
    raise_at = rec.strict.raise_index
    assert raise_at is not None
    guess = rec.pieces[-1]
    assert guess.confidence == "guessed" and "<|start|>assistant<|channel|>" in guess.how
    assert guess.span == (raise_at, len(tokens))
    # The guess is openai-harmony's own parse of the tokens with the assumed channel marker.
    assumed = vocab.harmony_parse([CHANNEL, *tokens[raise_at:]], "assistant", strict=True)
    assert [_fields(guess)] == [_harmony_fields(m) for m in assumed.messages]
    assert rec.tool_call is not None and rec.tool_call.name == "b"


def test_stream_cut_inside_a_header_gives_an_empty_guess_not_an_answer(vocab: Vocab) -> None:
    tokens = vocab.encode(
        "<|channel|>analysis<|message|>x<|end|><|start|>assistant<|channel|>final"
    )
    rec = recover(_input(tokens), vocab, "assistant")
    _check_invariants(rec, vocab)
    assert "Unexpected EOS" in (rec.strict.error or "")
    last = rec.pieces[-1]
    assert (last.confidence, last.channel, last.content, last.text) == (
        "guessed",
        "final",
        None,
        "",
    )
    assert rec.final is None  # a header with no content is not a final answer


def test_prose_ended_by_return_matches_lenient_harmony(vocab: Vocab) -> None:
    tokens = vocab.encode("I cannot help with that.<|return|>")
    rec = recover(_input(tokens), vocab, "assistant")
    _check_invariants(rec, vocab)
    assert rec.strict.error is not None and rec.lenient.error is None
    (piece,) = rec.pieces
    assert (piece.confidence, piece.channel, piece.terminator) == ("guessed", "final", RETURN)
    assert piece.text == rec.lenient.messages[0]["text"]


def test_empty_channel_keeps_the_content_as_a_guess(vocab: Vocab) -> None:
    tokens = vocab.encode(
        "<|channel|>analysis<|message|>x<|end|><|start|>assistant<|channel|><|message|>hi<|return|>"
    )
    rec = recover(_input(tokens), vocab, "assistant")
    _check_invariants(rec, vocab)
    assert "no channel value" in (rec.strict.error or "")
    assert (rec.pieces[-1].confidence, rec.pieces[-1].text) == ("guessed", "hi")


def test_role_none_stream_with_prompt_and_broken_completion(vocab: Vocab) -> None:
    tokens = vocab.encode(
        "<|start|>user<|message|>hi<|end|><|start|>assistant I refuse.<|end|>"
        "<|start|>assistant<|channel|>final<|message|>Sorry.<|return|>"
    )
    rec = recover(_input(tokens), vocab, "none")
    _check_invariants(rec, vocab)
    assert rec.pieces[0].role == "user" and rec.pieces[0].confidence == "certain"
    assert rec.pieces[-1].confidence == "certain" and rec.pieces[-1].text == "Sorry."


@pytest.mark.parametrize("seed", range(150))
def test_generated_broken_streams_keep_the_invariants(vocab: Vocab, seed: int) -> None:
    rng = random.Random(seed)
    tokens = vocab.encode(generators.well_formed(rng))
    for _ in range(3):
        tokens = generators.mutate(tokens, rng)
    _check_invariants(recover(_input(tokens), vocab, "assistant"), vocab)


# --- CLI -------------------------------------------------------------------------------------


def test_cli_json_marks_every_piece(vocab: Vocab) -> None:
    result = run(["recover", str(SAMPLES / "seed-multiturn-completion.json"), "-f", "json"])
    assert result.exit_code == 1 and result.stderr == ""
    record = json.loads(result.stdout)
    assert record["schema"] == "harmony-doctor.recover/1"
    assert record["strict"]["error"].startswith("unexpected tokens remaining")
    assert record["lenient"]["error"] is None
    pieces = record["salvage"]["pieces"]
    assert [(p["confidence"], p["span"]) for p in pieces] == [
        ("guessed", [0, 39]),
        ("certain", [39, 56]),
    ]
    assert record["salvage"]["final"] == 1


def test_cli_clean_stream_exits_zero() -> None:
    result = run(["recover", str(SAMPLES / "tool-call.harmony.txt")])
    assert result.exit_code == 0, result.stderr
    assert "openai-harmony parses the stream" in result.stdout


def test_cli_exit_zero_and_bad_input() -> None:
    ok = run(["recover", "--exit-zero", str(SAMPLES / "ignore-eos.json")])
    assert ok.exit_code == 0
    bad = run(["recover", "-"], "not tokens at all")
    assert bad.exit_code == 2
    assert bad.stderr.startswith("harmony-doctor: error: ") and bad.stderr.count("\n") == 1


def test_regression_deeply_nested_tool_call_arguments() -> None:
    # Found by fuzzing: json.loads of the salvaged arguments raised RecursionError.
    stream = (
        "<|channel|>analysis<|message|>x<|end|><|start|>assistant to=functions.get_weather"
        "<|channel|>commentary <|constrain|>json<|message|>" + "[" * 5000 + "<|call|>"
    )
    result = run(["recover", "-", "--format", "json"], stream)
    assert result.exit_code == 0
    tool_call = json.loads(result.stdout)["salvage"]["tool_call"]
    assert tool_call["recipient"] == "functions.get_weather"
    assert tool_call["arguments_json"] is False
