"""patterns.py: same problem, same pattern; different problems, different patterns."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from harmony_doctor.scan.patterns import pattern_of, remainder_template
from tests.helpers import run


def test_unexpected_special_tokens_keep_their_id() -> None:
    assert pattern_of("unexpected_token", token=200002) == "unexpected_token 200002 <|return|>"
    assert pattern_of("unexpected_token", token=200002) != pattern_of(
        "unexpected_token", token=200007
    )


@given(st.integers(min_value=0, max_value=199_997), st.integers(min_value=0, max_value=199_997))
def test_unexpected_text_tokens_are_one_pattern(a: int, b: int) -> None:
    # One cause (an ordinary word where a start token belongs) is one pattern, whatever the word:
    # a pattern per id made 200,000 distinct failures 200,000 groups.
    assert pattern_of("unexpected_token", token=a) == pattern_of("unexpected_token", token=b)
    assert pattern_of("unexpected_token", token=a) == "unexpected_token <text>"


def test_prose_remainders_collapse() -> None:
    a = remainder_template('... We need to continue. Follow "Question: ..." format')
    b = remainder_template("I'm sorry, but I can't help with that")
    assert a == b == "<prose>"


def test_structure_is_kept() -> None:
    assert remainder_template("to=functions.a") == "to=<name>"
    assert remainder_template("to=functions.a to=functions.b") == "to=<name> to=<name>"
    assert remainder_template("<|constrain|>json extra") == "<|constrain|>json <w>"
    assert remainder_template("prompt_token_id=[200006, 17360, 200008,") == "<nums>"
    # A word glued before markup is spaced like any other: `x <|channel|>commentary` is the
    # same shape.
    assert remainder_template("x<|channel|>commentary") == "<w> <|channel|>commentary"


def test_doubled_roles_are_their_own_pattern() -> None:
    assert (
        pattern_of("unknown_role", role="<|start|>assistant") == "unknown_role <|start|>assistant"
    )
    assert (
        pattern_of("unknown_role", role="assistantassistant") == "unknown_role assistantassistant"
    )
    assert pattern_of("unknown_role", role="robot") == "unknown_role <w>"


# --- one cause, one pattern ------------------------------------------------------------------

# Header remainders as logs show them (openai-harmony's words, cut where a log cut them), by
# cause: each family must give one pattern, and no two families the same.
FAMILIES: dict[str, list[str]] = {
    "<prose>": [
        "I cannot help with that request.",
        "I'm sorry, but I can't help with that. The user is asking for \"private\" data",
        "... We need to continue. Follow required format: each line includes question number "
        'and internal thought, then "Question: ..." The user responded "Could" earlier; we',
        "The user asks for the weather in Oslo. We should call get_weather.",
        "We must refuse. The user asks",
        "The user wants",
        "The user asks us to summarise the fil",
        "Need to answer in 2 sentences, then final answer.",
        "Sure.",
        'café a"b c\\d',
    ],
    "<prose> <|end|><|start|>assistant": [
        "The user asks us to summarise the file. We should call the tool. <|end|><|start|>assistant",
        "We should call the tool.<|end|><|start|>assistant",
        "I refuse.<|end|> <|start|>assistant",
    ],
    "to=<name>": ["to=functions.get_weather", "to=functions.lookup_order", "to=browser.search"],
    "to=<name> <|channel|>commentary": ["to=functions.a <|channel|>commentary"],
    "<|constrain|>json to=<name>": ["<|constrain|>json to=functions.x"],
    "<|channel|>final json": ["<|channel|>final json", "<|channel|>final  json"],
    "<nums>": [
        "prompt_token_id=[200006, 17360, 200008, 3575, 553, 17554, 162016, 11,",
        "prompt_token_id=[200006, 17360,",
    ],
    "<w>commentary": ["\u2013\u2013commentary", "\u2014commentary"],
    "<|constrain|><w>": ["<|constrain|>response", "<|constrain|>xml"],
}


def test_each_cause_is_one_pattern_and_causes_stay_apart() -> None:
    for expected, remainders in FAMILIES.items():
        assert {remainder_template(r) for r in remainders} == {expected}, expected


def test_a_space_after_a_special_token_is_a_different_problem() -> None:
    # `<|channel|> commentary`: the channel value is empty; `<|channel|>commentary` is fine.
    assert remainder_template("<|channel|> commentary") != remainder_template(
        "<|channel|>commentary"
    )


_PROSE_WORDS = st.sampled_from(
    [
        "The",
        "user",
        "asks",
        "final",
        "answer",
        "analysis",
        "we",
        "should",
        "3",
        "2025",
        '"Could"',
        "'hi'",
        "json",
        "assistant",
        "café",
        "...",
        "tool.",
        "(maybe)",
        "東京",
    ]
)


@given(st.lists(_PROSE_WORDS, min_size=2, max_size=30))
def test_free_text_is_prose_whatever_words_it_holds(words: list[str]) -> None:
    keywords = {"final", "analysis", "json", "assistant", "user"}
    numbers = [w.isdigit() for w in words]
    if all(w in keywords for w in words) or any(a and b for a, b in pairwise(numbers)):
        return  # keywords alone are structure (`final json`), numbers in a row a list of ids
    text = " ".join(words)
    assert remainder_template(text) == "<prose>"
    assert remainder_template(text + " <|end|><|start|>assistant") == (
        "<prose> <|end|><|start|>assistant"
    )


def test_scan_groups_a_prose_family_as_one_pattern(tmp_path: Path) -> None:
    lines = [
        f"ERROR 11-27 10:00:0{n} openai_harmony.HarmonyError: unexpected tokens remaining in "
        f"message header: Some({json.dumps(remainder)})"
        for n, remainder in enumerate(FAMILIES["<prose>"][:6])
    ]
    (tmp_path / "x.log").write_text("\n".join(lines) + "\n")
    out = run(["scan", "-f", "json", "-j", "1", "--by", "pattern", str(tmp_path)])
    groups = json.loads(out.stdout)["groups"]
    assert [(g["pattern"], g["count"]) for g in groups] == [("header_leftover <prose>", 6)]


def test_distinct_text_tokens_scan_as_one_group(tmp_path: Path) -> None:
    # 2,000 failures of one cause, each a different ordinary token: one group, counted whole
    # (a group per id held a row per failure: 200,000 of them took 530 MiB).
    log = tmp_path / "vllm.log"
    log.write_text(
        "".join(
            f"ERROR 11-27 10:00:{n % 60:02d} openai_harmony.HarmonyError: Unexpected token "
            f"{1000 + n} while expecting start token 200006\n"
            for n in range(2000)
        )
    )
    result = run(["scan", "-j", "1", "--by", "pattern", "-f", "json", str(log)])
    groups = json.loads(result.stdout)["groups"]
    assert [(g["pattern"], g["count"]) for g in groups] == [("unexpected_token <text>", 2000)]


def test_a_long_header_remainder_is_templated_on_its_head_and_tail() -> None:
    """A megabyte of header remainder was read word by word into a megabyte pattern key."""
    from harmony_doctor.scan.patterns import ELIDED, REMAINDER_END, remainder_template

    remainder = "to=functions.x " + "word " * 200_000 + "<|channel|>final"
    template = remainder_template(remainder)
    assert template == f"to=<name> <prose> {ELIDED} <prose> <|channel|>final"
    assert len(template) < 2 * REMAINDER_END
    assert remainder_template("to=functions.x word word") == "to=<name> <prose>"
