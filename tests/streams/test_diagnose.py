"""streams/diagnose.py: openai-harmony's verdict, the rule that explains it, and warnings."""

from __future__ import annotations

import pytest

from harmony_doctor.faults.classify import FaultContext, classify
from harmony_doctor.harmony.vocab import Vocab
from harmony_doctor.models import Diagnosis, TokenInput
from harmony_doctor.streams.diagnose import diagnose


def run(vocab: Vocab, text: str, role: str = "assistant", strict: bool = True) -> Diagnosis:
    inp = TokenInput(tokens=tuple(vocab.encode(text)), detected="text", format="harmony-text")
    return diagnose(inp, vocab, role, strict)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "role", "kind", "code"),
    [
        (
            "We need to continue. Follow the format<|message|>x<|end|>",
            "assistant",
            "header_leftover",
            "HD101",
        ),
        (
            "<|channel|>commentary to=functions.a to=functions.a <|constrain|>json<|message|>{}<|call|>",
            "assistant",
            "header_leftover",
            "HD102",
        ),
        (
            "<|channel|>commentary json extra words<|message|>{}<|call|>",
            "assistant",
            "header_leftover",
            "HD104",
        ),
        (
            "<|channel|>final<|message|>ok<|end|><|return|>",
            "assistant",
            "unexpected_token",
            "HD111",
        ),
        (
            "<|channel|>commentary to=f json<|message|>{}<|call|>commentary",
            "assistant",
            "unexpected_token",
            "HD112",
        ),
        ("<|channel|>final<|message|>ok<|end|><|end|>", "assistant", "unexpected_token", "HD113"),
        ("<|channel|>final<|message|>ok<|end|>Hello", "assistant", "unexpected_token", "HD114"),
        ("<|start|>assistantassistant<|message|>x<|end|>", "none", "unknown_role", "HD121"),
        ("<|start|><|start|>assistant<|message|>x<|end|>", "none", "unknown_role", "HD121"),
        ("<|start|>robot<|message|>x<|end|>", "none", "unknown_role", "HD122"),
        ("<|channel|> final<|message|>x", "assistant", "empty_channel", "HD131"),
        (
            "<|channel|>analysis<|message|>x<|end|><|start|>assistant<|channel|>fin",
            "assistant",
            "header_eos",
            "HD141",
        ),
        ("<|start|><|message|>x<|end|>", "none", "missing_role", "HD151"),
    ],
)
def test_each_kind_gets_its_rule(vocab: Vocab, text: str, role: str, kind: str, code: str) -> None:
    d = run(vocab, text, role)
    assert d.verdict == "fault"
    errors = [f for f in d.findings if f.severity == "error"]
    assert len(errors) == 1
    (f,) = errors
    assert (f.kind, f.code) == (kind, code)
    assert f.harmony_error == d.harmony_error
    assert f.raise_index == d.harmony_raise_index
    assert f.origin_index is not None and f.raise_index is not None
    assert f.origin_index <= f.raise_index
    assert not d.disagreements


def test_header_decode_kind(vocab: Vocab) -> None:
    tokens = (*vocab.encode("<|channel|>final"), 100, *vocab.encode("<|message|>x"))
    d = diagnose(TokenInput(tokens, "tokens", "ids"), vocab, "assistant")
    assert [f.code for f in d.findings] == ["HD161"]


def test_seed_failure_origin_is_far_before_the_raise(vocab: Vocab) -> None:
    prose = " ".join(["We need to keep narrowing the candidates."] * 30)
    d = run(vocab, f"...{prose}<|end|><|start|>assistant<|channel|>final<|message|>Q14?<|return|>")
    (f,) = d.findings
    assert f.code == "HD101"
    assert f.origin_index == 0
    assert f.raise_index is not None and f.raise_index > 200
    assert f.span == (0, f.raise_index)


def test_clean_stream_has_no_findings(vocab: Vocab) -> None:
    d = run(
        vocab,
        "<|channel|>analysis<|message|>a<|end|><|start|>assistant<|channel|>final<|message|>b<|return|>",
    )
    assert d.verdict == "ok" and d.findings == () and len(d.replay.messages) == 2


@pytest.mark.parametrize(
    ("text", "code", "origin_token"),
    [
        ("<|channel|>thinking<|message|>x<|end|>", "HD201", "thinking"),
        ("<|channel|>final <|constrain|>json<|message|>{}<|return|>", "HD202", "<|constrain|>"),
        (
            "<|channel|>final<|message|>a<|reserved_200099|>b<|return|>",
            "HD203",
            "<|reserved_200099|>",
        ),
        ("<|channel|>commentary<|channel|>commentary<|message|>x<|end|>", "HD203", "<|channel|>"),
        ("<|message|>hi<|end|>", "HD204", "<|message|>"),
    ],
)
def test_warnings_harmony_lets_through(
    vocab: Vocab, text: str, code: str, origin_token: str
) -> None:
    d = run(vocab, text)
    assert d.verdict == "ok"
    codes = [f.code for f in d.findings]
    assert code in codes
    f = d.findings[codes.index(code)]
    assert f.severity == "warning" and f.raise_index is None
    assert f.origin_index is not None
    assert vocab.decode([d.input.tokens[f.origin_index]]) == origin_token


def test_lenient_run_uses_lenient_verdict(vocab: Vocab) -> None:
    text = "I'm sorry, but I can't help with that.<|end|>"
    assert run(vocab, text, strict=True).verdict == "fault"
    lenient = run(vocab, text, strict=False)
    assert lenient.verdict == "ok"
    assert lenient.lenient_messages[0]["text"] == "I'm sorry, but I can't help with that."


def test_classify_from_text_only_context() -> None:
    assert classify(FaultContext("unexpected_token", token=200002)).code == "HD111"
    assert classify(FaultContext("unexpected_token", token=12606)).code == "HD112"
    assert classify(FaultContext("unknown_role", role_word="<|start|>assistant")).code == "HD121"
    numbers = "prompt_token_id=[200006, 17360, 200008, 3575, 553, 17554, 162016, 11, 261]"
    assert classify(FaultContext("header_leftover", leftover=numbers)).code == "HD105"


def test_stream_starting_with_start_gets_a_role_note(vocab: Vocab) -> None:
    d = run(vocab, "<|start|>assistant<|channel|>final<|message|>hi<|return|>")
    assert any("--role none" in note for note in d.input.notes)
    assert not run(vocab, "<|start|>user<|message|>hi<|end|>", role="none").input.notes


# --- one diagnosis per cause -----------------------------------------------------------------

# Token-level cases (role, Harmony text): each renders as the log line its server would write.
SAME_CAUSE_CASES = [
    ("assistant", "We need to continue. Follow the format<|message|>x<|end|>"),
    (
        "assistant",
        "<|channel|>commentary to=functions.a to=functions.a <|constrain|>json<|message|>{}<|call|>",
    ),
    (
        "assistant",
        '<|channel|>commentary to=functions.get_weather {"location": "Tokyo"}<|call|>'
        "<|start|>assistant<|channel|>analysis<|message|>x<|end|>",
    ),
    ("assistant", "<|channel|>final<|channel|>final to=x json<|message|>x<|end|>"),
    ("assistant", "<|channel|>final <|constrain|>json extra more<|message|>{}<|end|>"),
    ("assistant", "<|channel|>commentary json extra words<|message|>{}<|call|>"),
    (
        "assistant",
        "<|channel|>analysis Thinking about the answer here.<|end|><|start|>assistant"
        "<|channel|>final<|message|>Hi<|return|>",
    ),
    (
        "assistant",
        "<|channel|>analysis<|message|>x<|end|><|start|>assistant<|channel|>commentary Hello "
        "there friend<|end|><|start|>assistant<|channel|>final<|message|>Hi<|return|>",
    ),
    (
        "assistant",
        "I cannot help with that request sorry<|end|><|start|>assistant<|channel|>final"
        "<|message|>x<|return|>",
    ),
    ("none", "<|start|><|start|>assistant<|message|>x<|end|>"),
    ("none", "<|start|>assistantassistant<|message|>x<|end|>"),
    ("none", "<|start|>robot<|message|>x<|end|>"),
    ("none", "<|start|>assistant<|channel|>analysis<|channel|>analysis<|message|>x<|end|>"),
    ("assistant", "<|channel|>final<|message|>ok<|end|><|return|>"),
    ("assistant", "<|channel|>commentary to=f json<|message|>{}<|call|>commentary"),
    ("assistant", "<|channel|>final<|message|>ok<|end|><|end|>"),
    ("assistant", "<|channel|>final<|message|>ok<|end|>Hello"),
    ("assistant", "<|channel|>final<|message|>ok<|end|>assistant"),
    ("assistant", "<|channel|> final<|message|>x"),
    ("none", "<|start|><|message|>x<|end|>"),
    ("assistant", "<|channel|>analysis<|message|>x<|end|><|start|>assistant<|channel|>fin"),
]
# header_eos carries no header text in its message: from a log only the kind's general rule
# can be given, from tokens the header shows the finer cause.
EOS_ONLY_FROM_TOKENS = [
    ("assistant", "<|channel|>commentary Hello<|end|>", "HD142"),
    (
        "assistant",
        "<|start|>system<|message|>You are ChatGPT.<|end|><|start|>user<|message|>Hi<|end|>"
        "<|start|>assistant",
        "HD143",
    ),
]


def _log_codes(error: str) -> list[str]:
    from harmony_doctor.logs import extract_text

    line = (
        "(APIServer pid=1) ERROR 07-01 10:00:00 [serving_chat.py:1100] "
        f"openai_harmony.HarmonyError: {error}"
    )
    return [e.code for e in extract_text(line)]


@pytest.mark.parametrize(("role", "text"), SAME_CAUSE_CASES)
def test_same_failure_same_code_from_tokens_and_log(vocab: Vocab, role: str, text: str) -> None:
    d = run(vocab, text, role)
    assert d.harmony_error is not None  # the message openai-harmony itself raised
    (finding,) = [f for f in d.findings if f.severity == "error"]
    assert _log_codes(d.harmony_error) == [finding.code]


@pytest.mark.parametrize(("role", "text", "code"), EOS_ONLY_FROM_TOKENS)
def test_header_eos_log_gives_the_general_rule(
    vocab: Vocab, role: str, text: str, code: str
) -> None:
    d = run(vocab, text, role)
    (finding,) = [f for f in d.findings if f.severity == "error"]
    assert (finding.kind, finding.code) == ("header_eos", code)
    assert d.harmony_error is not None
    assert _log_codes(d.harmony_error) == ["HD141"]


def test_stop_token_inside_header_gets_its_own_diagnosis(vocab: Vocab) -> None:
    d = run(vocab, "<|channel|>commentary Hello<|end|>")
    (finding,) = d.findings
    assert finding.code == "HD142"
    assert "strict=False" in finding.fix and "max_tokens" not in finding.fix
    assert d.lenient_error is None  # lenient parsing recovers it
    assert len(d.lenient_messages) == 1  # the message it closed, kept


def test_prompt_fed_as_completion_is_diagnosed(vocab: Vocab) -> None:
    d = run(
        vocab,
        "<|start|>system<|message|>You are ChatGPT.<|end|><|start|>user<|message|>Hi<|end|>"
        "<|start|>assistant",
    )
    assert [f.code for f in d.findings if f.severity == "error"] == ["HD143"]


def test_open_stream_skips_the_end_of_stream_check(vocab: Vocab) -> None:
    text = "<|channel|>analysis<|message|>x<|end|><|start|>assistant<|channel|>fin"
    inp = TokenInput(tokens=tuple(vocab.encode(text)), detected="text", format="harmony-text")
    assert diagnose(inp, vocab, "assistant").verdict == "fault"
    opened = diagnose(inp, vocab, "assistant", open_stream=True)
    assert opened.verdict == "ok"
    assert opened.replay.fault is None
    assert not opened.disagreements


def test_open_stream_still_reports_faults_before_the_end(vocab: Vocab) -> None:
    inp = TokenInput(
        tokens=tuple(vocab.encode("<|channel|>final<|message|>ok<|end|><|return|>")),
        detected="text",
        format="harmony-text",
    )
    d = diagnose(inp, vocab, "assistant", open_stream=True)
    assert [f.code for f in d.findings] == ["HD111"]


def test_id_accepted_by_openai_harmony_is_a_markup_warning(vocab: Vocab) -> None:
    tokens = (*vocab.encode("<|channel|>final<|message|>ok"), 201088, *vocab.encode("<|return|>"))
    d = diagnose(TokenInput(tokens, "tokens", "ids"), vocab, "assistant")
    assert d.verdict == "ok"
    assert [f.code for f in d.findings] == ["HD203"]
