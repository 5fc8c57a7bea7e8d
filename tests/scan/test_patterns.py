"""patterns.py: same problem, same pattern; different problems, different patterns."""

from __future__ import annotations

from harmony_doctor.scan.patterns import pattern_of, remainder_template


def test_unexpected_tokens_keep_their_id() -> None:
    assert pattern_of("unexpected_token", token=200002) == "unexpected_token 200002 <|return|>"
    assert pattern_of("unexpected_token", token=12606) == "unexpected_token 12606"
    assert pattern_of("unexpected_token", token=200002) != pattern_of(
        "unexpected_token", token=200007
    )


def test_prose_remainders_collapse() -> None:
    a = remainder_template('... We need to continue. Follow "Question: ..." format')
    b = remainder_template("I'm sorry, but I can't help with that")
    assert a == b == "<prose>"


def test_structure_is_kept() -> None:
    assert remainder_template("to=functions.a") == "to=<name>"
    assert remainder_template("to=functions.a to=functions.b") == "to=<name> to=<name>"
    assert remainder_template("<|constrain|>json extra") == "<|constrain|>json <w>"
    assert remainder_template("prompt_token_id=[200006, 17360, 200008,") == "<w> <nums>"
    assert remainder_template("x<|channel|>commentary") == "<w><|channel|>commentary"


def test_doubled_roles_are_their_own_pattern() -> None:
    assert (
        pattern_of("unknown_role", role="<|start|>assistant") == "unknown_role <|start|>assistant"
    )
    assert (
        pattern_of("unknown_role", role="assistantassistant") == "unknown_role assistantassistant"
    )
    assert pattern_of("unknown_role", role="robot") == "unknown_role <w>"
