"""replay.py: openai-harmony's header rules, position keeping, and the origin of a fault."""

from __future__ import annotations

import pytest

from harmony_doctor.errors import HeaderError
from harmony_doctor.harmony.replay import find_origin, parse_header, replay
from harmony_doctor.harmony.vocab import Vocab


@pytest.mark.parametrize(
    ("text", "role", "expected"),
    [
        ("<|channel|>final", "assistant", ("assistant", None, "final", None, None, None)),
        (
            "<|channel|>commentary to=functions.f <|constrain|>json",
            "assistant",
            ("assistant", None, "commentary", "functions.f", "<|constrain|>json", None),
        ),
        (
            " to=functions.f<|channel|>commentary json",
            "assistant",
            ("assistant", None, "commentary", "functions.f", "json", None),
        ),
        (
            "<|channel|>final <|constrain|>json",
            "assistant",
            ("assistant", None, "final", "<|constrain|>json", None, None),
        ),
        ("a b c d", "assistant", ("assistant", None, None, "c", "d", "a b")),
        (
            "functions.get to=assistant<|channel|>commentary",
            None,
            ("tool", "functions.get", "commentary", "assistant", None, None),
        ),
        ("user", None, ("user", None, None, None, None, None)),
        (
            "assistant assistant<|channel|>x",
            None,
            ("assistant", None, "x", "assistant", None, None),
        ),
        (
            "<|channel|>final\u3000extra",
            "assistant",
            ("assistant", None, "final", "extra", None, None),
        ),
    ],
)
def test_parse_header_mirrors_harmony(
    text: str, role: str | None, expected: tuple[object, ...]
) -> None:
    h = parse_header(text, role, parse_recipient_and_type=True)
    assert (h.role, h.name, h.channel, h.recipient, h.content_type, h.leftover) == expected


@pytest.mark.parametrize(
    ("text", "role", "kind"),
    [
        ("<|channel|> final", "assistant", "empty_channel"),
        ("<|channel|><|message|>", "assistant", "empty_channel"),
        ("", None, "missing_role"),
        ("assistantassistant", None, "unknown_role"),
        ("<|start|>assistant", None, "unknown_role"),
    ],
)
def test_parse_header_errors(text: str, role: str | None, kind: str) -> None:
    with pytest.raises(HeaderError) as info:
        parse_header(text, role, parse_recipient_and_type=True)
    assert info.value.kind == kind


def test_positions_of_a_two_message_completion(vocab: Vocab) -> None:
    text = (
        "<|channel|>analysis<|message|>Think.<|end|><|start|>assistant<|channel|>commentary "
        'to=functions.f <|constrain|>json<|message|>{"a": 1}<|call|>'
    )
    tokens = vocab.encode(text)
    walk = replay(tokens, vocab, "assistant")
    assert walk.fault is None and walk.origin_index is None
    first, second = walk.messages
    assert first.start_index is None and first.header == (0, 2)
    assert tokens[first.header[1]] == 200008
    assert first.text == "Think." and first.terminator == 200007
    assert first.terminator_index is not None
    assert second.start_index == first.terminator_index + 1
    assert tokens[second.start_index] == 200006
    assert second.recipient == "functions.f" and second.content_type == "<|constrain|>json"
    assert second.terminator == 200012 and second.terminator_index == len(tokens) - 1
    assert vocab.decode(tokens[second.content[0] : second.content[1]]) == '{"a": 1}'


def test_content_without_stop_ends_at_eos(vocab: Vocab) -> None:
    tokens = vocab.encode("<|channel|>final<|message|>partial answer")
    walk = replay(tokens, vocab, "assistant")
    assert walk.fault is None
    assert walk.messages[0].terminator is None
    assert walk.messages[0].content == (3, len(tokens))


def _origin(vocab: Vocab, text: str, role: str = "assistant") -> tuple[int | None, str]:
    tokens = vocab.encode(text)
    index, _ = find_origin(tokens, vocab, role)  # type: ignore[arg-type]
    return index, vocab.decode([tokens[index]]) if index is not None else ""


def test_origin_of_prose_is_the_first_token(vocab: Vocab) -> None:
    assert _origin(vocab, "We need to continue.<|message|>x") == (0, "We")


def test_origin_of_duplicated_recipient_is_the_second_to(vocab: Vocab) -> None:
    text = "<|channel|>commentary to=functions.a to=functions.a <|constrain|>json<|message|>{}"
    index, token = _origin(vocab, text)
    tokens = vocab.encode(text)
    assert token == " to"
    assert tokens[:index].count(316) == 1  # the first " to" came before


def test_origin_of_recipient_in_role_and_channel(vocab: Vocab) -> None:
    text = " to=functions.a<|channel|>commentary to=functions.a json<|message|>{}"
    index, token = _origin(vocab, text)
    assert token == " to" and index is not None and index > 2


def test_origin_of_second_channel(vocab: Vocab) -> None:
    assert _origin(vocab, "<|channel|>analysis<|channel|>analysis<|message|>x") == (
        2,
        "<|channel|>",
    )


def test_origin_of_unknown_channel(vocab: Vocab) -> None:
    assert _origin(vocab, "<|channel|>thinking<|message|>x") == (1, "thinking")


def test_origin_of_return_after_end(vocab: Vocab) -> None:
    assert _origin(vocab, "<|channel|>final<|message|>ok<|end|><|return|>") == (5, "<|return|>")


def test_origin_of_text_after_call(vocab: Vocab) -> None:
    text = "<|channel|>commentary to=f json<|message|>{}<|call|>commentary"
    _index, token = _origin(vocab, text)
    assert token == "comment"


def test_origin_of_doubled_start(vocab: Vocab) -> None:
    text = "<|start|>assistant<|start|>assistant<|channel|>final<|message|>x<|end|>"
    assert _origin(vocab, text, "none") == (2, "<|start|>")


def test_origin_of_special_token_in_content(vocab: Vocab) -> None:
    assert _origin(vocab, "<|channel|>final<|message|>a<|channel|>b<|return|>") == (
        4,
        "<|channel|>",
    )


def test_well_formed_conversation_has_no_origin(vocab: Vocab) -> None:
    text = (
        "<|start|>system<|message|>sys<|end|><|start|>developer<|message|>dev<|end|>"
        "<|start|>user<|message|>hi<|end|><|start|>assistant<|channel|>commentary to=functions.f"
        " <|constrain|>json<|message|>{}<|call|><|start|>functions.f to=assistant<|channel|>"
        'commentary<|message|>{"ok": true}<|end|><|start|>assistant<|channel|>final<|message|>'
        "done<|return|>"
    )
    assert _origin(vocab, text, "none") == (None, "")


def test_strict_and_lenient_replay_of_a_refusal(vocab: Vocab) -> None:
    tokens = vocab.encode("I'm sorry, but I can't help with that.<|end|>")
    strict = replay(tokens, vocab, "assistant", strict=True)
    assert strict.fault is not None and strict.fault.kind == "header_eos"
    lenient = replay(tokens, vocab, "assistant", strict=False)
    assert lenient.fault is None
    (message,) = lenient.messages
    assert message.recovered and message.text == "I'm sorry, but I can't help with that."
    assert message.terminator == 200007


def test_lenient_drops_headerless_messages_after_the_first(vocab: Vocab) -> None:
    text = "<|channel|>final<|message|>ok<|end|><|start|>assistant oops<|end|>"
    walk = replay(vocab.encode(text), vocab, "assistant", strict=False)
    assert walk.fault is None
    assert [m.text for m in walk.messages] == ["ok"]


def test_header_that_is_not_utf8(vocab: Vocab) -> None:
    tokens = [*vocab.encode("<|channel|>final"), 100, *vocab.encode("<|message|>x")]
    assert vocab.token_bytes(100) == b"\xa7"  # a lone continuation byte
    walk = replay(tokens, vocab, "assistant")
    assert walk.fault is not None and walk.fault.kind == "header_decode"


def test_open_stream_replay_has_no_end_of_stream_fault(vocab: Vocab) -> None:

    tokens = vocab.encode("<|channel|>analysis<|message|>x<|end|><|start|>assistant<|channel|>fin")
    assert replay(tokens, vocab, "assistant").fault is not None
    walk = replay(tokens, vocab, "assistant", open_stream=True)
    assert walk.fault is None
    assert [m.channel for m in walk.messages] == ["analysis"]


def test_name_unit_class_allows_what_the_negated_class_allowed() -> None:
    """The header name's one-byte class, written as the ASCII characters it allows, accepts
    exactly what `[^<exclude>\\x80-\\uffff]` accepts over every character a header's grammar
    text can hold (latin-1 bytes, private-use symbols of special tokens: all below U+10000)."""
    import re

    from harmony_doctor.harmony import spec

    exclude = spec.NAME.exclude
    new = re.compile(spec._ascii_outside(exclude))
    old = re.compile(f"[^{exclude}\\x80-\\uffff]")
    differ = [
        c for c in range(0x10000) if bool(new.fullmatch(chr(c))) != bool(old.fullmatch(chr(c)))
    ]
    assert differ == []
    assert new.fullmatch("a") and not new.fullmatch("<") and not new.fullmatch("\xe9")
    symbols = [*spec.SYMBOL.values(), spec.OTHER_SPECIAL]
    assert all(ord(s) < 0x10000 for s in symbols)
