"""The emitted grammar, proved with llguidance against find_origin on generated token streams."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from harmony_doctor.choices import CONTENT_TYPES
from harmony_doctor.errors import InputError
from harmony_doctor.harmony import spec
from harmony_doctor.harmony.replay import find_origin
from harmony_doctor.harmony.vocab import CALL, END, RETURN, Vocab
from harmony_doctor.streams import grammar as g
from tests import generators
from tests.helpers import run

llguidance = pytest.importorskip("llguidance")

STREAMS = 3000  # well-formed completions per engine; each also yields three mutated streams


@pytest.fixture(scope="module")
def default_matcher(vocab: Vocab) -> Iterator[Any]:
    yield g.matcher(g.emit(g.GrammarOptions(), "lark"), vocab)


@pytest.fixture(scope="module", params=["own-eos", "return-is-eos"])
def engine_matcher(request: pytest.FixtureRequest, vocab: Vocab) -> Iterator[Any]:
    """Our offline engine (EOS a token no stream holds), and the one vLLM and SGLang run."""
    eos = g.ENGINE_EOS if request.param == "own-eos" else RETURN
    yield g.matcher(g.emit(g.GrammarOptions(), "lark"), vocab, eos)


def _complete(tokens: Sequence[int], origin: int | None) -> bool:
    return origin is None and bool(tokens) and tokens[-1] in (RETURN, CALL)


def _verdict(m: Any, tokens: Sequence[int]) -> g.GrammarRun:
    return g.run(m.deep_copy(), tokens, detail=False)


def test_default_grammar_is_spec_header_grammar() -> None:
    (kind,) = g.message_kinds(g.GrammarOptions())
    assert kind.header == spec.ASSISTANT_REST
    assert kind.stops == (END, RETURN, CALL)


def test_generated_streams_agree_with_find_origin(vocab: Vocab, engine_matcher: Any) -> None:
    rng = random.Random(20260807)
    checked = malformed = 0
    disagreements: list[str] = []
    for n in range(STREAMS):
        tokens = vocab.encode(generators.well_formed(rng))
        whole = _verdict(engine_matcher, tokens)
        assert find_origin(tokens, vocab, "assistant") == (None, None), n
        assert whole.blocked_index is None and whole.complete, n
        for _ in range(3):
            mutated = generators.mutate(tokens, rng)
            origin, _ = find_origin(mutated, vocab, "assistant")
            verdict = _verdict(engine_matcher, mutated)
            checked += 1
            malformed += origin is not None
            if (verdict.blocked_index, verdict.complete) != (origin, _complete(mutated, origin)):
                disagreements.append(f"stream {n}: origin {origin}, llguidance {verdict}")
    assert not disagreements, disagreements[:5]
    assert malformed > checked // 2  # the mutations do break most streams


def test_invalid_utf8_in_a_recipient_is_blocked_at_that_byte(
    vocab: Vocab, default_matcher: Any
) -> None:
    # b"\xa9" alone cannot continue " to=f": openai-harmony could never decode this header.
    tokens = [*vocab.encode(" to=f"), generators.BYTE_TOKENS[0], *vocab.encode("<|channel|>final")]
    origin, _ = find_origin(tokens, vocab, "assistant")
    assert origin == len(vocab.encode(" to=f"))
    assert _verdict(default_matcher, tokens).blocked_index == origin


def test_a_cut_multibyte_recipient_is_still_viable(vocab: Vocab, default_matcher: Any) -> None:
    tokens = [*vocab.encode("<|channel|>commentary to=f"), generators.BYTE_TOKENS[1]]
    assert find_origin(tokens, vocab, "assistant") == (None, None)
    assert _verdict(default_matcher, tokens).blocked_index is None


def _gbnf_matcher(vocab: Vocab, options: g.GrammarOptions) -> Any:
    compiled = llguidance.grammar_from("gbnf", g.emit(options, "gbnf"))
    return llguidance.LLMatcher(g.llg_tokenizer(vocab), compiled, log_level=0)


def test_gbnf_text_level_grammar_accepts_the_same_texts(vocab: Vocab) -> None:
    m = _gbnf_matcher(vocab, g.GrammarOptions())
    assert not m.is_error(), m.get_error()
    plain = vocab.tiktoken.encode_ordinary  # special tokens as text, as a text-level engine sees
    rng = random.Random(5)
    for n in range(300):
        tokens = vocab.encode(generators.well_formed(rng))
        verdict = _verdict(m, plain(vocab.decode(tokens)))
        assert verdict.blocked_index is None and verdict.complete, n
        mutated = generators.mutate(tokens, rng)
        try:
            text = b"".join(vocab.token_bytes(t) for t in mutated).decode()
        except UnicodeDecodeError:
            continue  # a text-level engine never sees invalid UTF-8
        origin, _ = find_origin(mutated, vocab, "assistant")
        verdict = _verdict(m, plain(text))
        assert (verdict.blocked_index is None) == (origin is None), n
        assert verdict.complete == _complete(mutated, origin), n


CALL_TEXT = "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{}<|call|>"
CHANNEL = "<|channel|>"


@pytest.mark.parametrize(
    ("options", "text", "accepted_prefix"),
    [
        (g.GrammarOptions(tools=("functions.get_weather",)), CALL_TEXT, None),
        (
            g.GrammarOptions(tools=("functions.lookup",)),
            CALL_TEXT,
            CHANNEL + "commentary to=functions",
        ),
        (g.GrammarOptions(tools=()), CALL_TEXT, CHANNEL + "commentary"),
        (
            g.GrammarOptions(tools=("functions.get_weather",)),
            CHANNEL + "analysis to=functions.get_weather<|message|>{}<|call|>",
            CHANNEL + "analysis",
        ),
        (g.GrammarOptions(channels=("final",)), CHANNEL + "analysis<|message|>x<|end|>", CHANNEL),
        (g.GrammarOptions(content_types=()), CALL_TEXT, CALL_TEXT.split(" <|")[0]),
        (g.GrammarOptions(content_types=("json",)), CALL_TEXT, CALL_TEXT.split("<|con")[0]),
        (
            g.GrammarOptions(require_call=True),
            CALL_TEXT.replace("call|>", "end|>"),
            CALL_TEXT.split("<|call|>")[0],
        ),
        (
            g.GrammarOptions(require_call=True),
            CHANNEL + "final<|message|>x<|call|>",
            CHANNEL + "final<|message|>x",
        ),
        (
            g.GrammarOptions(require_return=True),
            CHANNEL + "final<|message|>x<|end|>",
            CHANNEL + "final<|message|>x",
        ),
        (
            g.GrammarOptions(require_return=True),
            CHANNEL + "analysis<|message|>x<|return|>",
            CHANNEL + "analysis<|message|>x",
        ),
        (g.GrammarOptions(require_return=True, require_call=True), CALL_TEXT, None),
    ],
)
def test_options_narrow_the_language(
    vocab: Vocab, options: g.GrammarOptions, text: str, accepted_prefix: str | None
) -> None:
    tokens = vocab.encode(text)
    expected = None
    if accepted_prefix is not None:
        expected = len(vocab.encode(accepted_prefix))
        assert tokens[:expected] == vocab.encode(accepted_prefix)  # a token boundary
    m = g.matcher(g.emit(options, "lark"), vocab)
    assert g.run(m, tokens, detail=False).blocked_index == expected


def test_every_option_combination_compiles(vocab: Vocab) -> None:
    combos = [
        g.GrammarOptions(channels=c, tools=t, content_types=ct, require_return=r, require_call=k)
        for c in (("final",), ("analysis", "final"), spec.SPEC_CHANNELS)
        for t in (None, (), ("functions.a", "python"))
        for ct in ((), ("json",), CONTENT_TYPES)
        for r in (False, True)
        for k in (False, True)
    ]
    for options in combos:
        for dialect in ("lark", "gbnf"):
            g.validate(g.emit(options, dialect), dialect, vocab)


def test_tools_from_a_chat_request() -> None:
    request = {
        "messages": [],
        "tools": [
            {"type": "function", "function": {"name": "get_weather", "parameters": {}}},
            {"type": "function", "name": "lookup"},
        ],
    }
    assert g.tools_from_request(json.dumps(request), "req.json") == (
        "functions.get_weather",
        "functions.lookup",
    )
    assert g.tools_from_request("[]", "tools.json") == ()


def test_cli_tools_and_errors(tmp_path: Any) -> None:
    request = tmp_path / "chat.json"
    request.write_text(json.dumps({"tools": [{"function": {"name": "get_weather"}}]}))
    result = run(["grammar", "--tools-from", str(request), "--tool", "browser.search"])
    assert result.exit_code == 0, result.stderr
    assert 'recipient: " to=" ("browser.search" | "functions.get_weather")' in result.stdout
    bad = run(["grammar", "--tool", "a b"])
    assert bad.exit_code == 2 and bad.stderr.count("\n") == 1 and "a b" in bad.stderr
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    assert run(["grammar", "--tools-from", str(broken)]).exit_code == 2
    mixed = run(["grammar", "--content-type", "none", "--content-type", "json"])
    assert mixed.exit_code == 2


def test_explain_grammar_file_and_role(tmp_path: Any) -> None:
    stream = "<|channel|>final<|message|>hi<|end|><|return|>"
    lark = tmp_path / "g.lark"
    lark.write_text(g.emit(g.GrammarOptions(), "lark"))
    result = run(["explain", "--grammar-file", str(lark), "-f", "json", "-"], stream)
    record = json.loads(result.stdout)["guided_decoding"]
    assert record["blocked_index"] == record["origin_index"] == 5
    assert record["allowed_sample"] == [{"id": 200006, "text": "<|start|>"}]
    refused = run(["explain", "--grammar", "--role", "none", "-"], stream)
    assert refused.exit_code == 2 and "--role assistant" in refused.stderr
    lark.write_text("start: nonsense_rule\n")
    assert run(["explain", "--grammar-file", str(lark), "-"], stream).exit_code == 2


@pytest.mark.parametrize(
    ("kind", "token", "blocked"),
    [
        ("header_leftover", None, True),
        ("unexpected_token", 200002, True),
        ("unexpected_token", 12606, True),
        ("unknown_role", None, True),
        ("empty_channel", None, True),
        ("header_decode", None, True),
        ("header_eos", None, False),
        ("constrain_as_recipient", None, False),
    ],
)
def test_log_verdicts(kind: str, token: int | None, blocked: bool) -> None:
    assert g.log_verdict(kind, token, ("to=a", "to=a"))[0] is blocked


def test_explain_grammar_on_a_traceback_only_log() -> None:
    log = (
        "openai_harmony.HarmonyError: unexpected tokens remaining in message header: "
        'Some("to=functions.search to=functions.search")\n'
    )
    record = json.loads(run(["explain", "--grammar", "-f", "json", "-"], log).stdout)
    (failure,) = record["guided_decoding"]["failures"]
    assert failure["blocked"] is True and failure["kind"] == "header_leftover"


def test_regression_deeply_nested_tools_file(tmp_path: Path) -> None:
    # Found by fuzzing: a --tools-from file nested too deeply escaped as a RecursionError.
    tools = tmp_path / "tools.json"
    tools.write_text("[" * 5000)
    result = run(["grammar", "--tools-from", str(tools)])
    assert result.exit_code == 2
    assert result.stderr == f"harmony-doctor: error: {tools}: JSON nested too deeply\n"


# --- tool names (red team M10 and H8: "functions.", ".", raw ESC and U+202E in the output) ----


@pytest.mark.parametrize(
    ("tool", "problem"),
    [
        ("", "is empty"),
        ("  ", "is empty"),
        (".", "a part between dots is empty"),
        ("functions.", "a part between dots is empty"),
        ("a..b", "a part between dots is empty"),
        (".x", "a part between dots is empty"),
        ("a b", "whitespace or '<'"),
        ("a<b", "whitespace or '<'"),
        ("ev\x1b]0;PWN\x07il", "a control or invisible character"),
        ("evil\u202e", "a control or invisible character"),
        ("x" * 201, "longer than 200 characters"),
    ],
)
def test_a_tool_name_no_header_can_hold_is_refused(tool: str, problem: str) -> None:
    with pytest.raises(InputError, match=re.escape(problem)):
        g.narrow_tools([g.recipient_for(tool)])


def test_cli_refuses_a_bad_tool_name_in_one_short_escaped_line() -> None:
    result = run(["grammar", "--tool", "\x1b[31m" + "a" * 100_000])
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and len(result.stderr) < 200
    assert "\x1b" not in result.stderr
    assert result.stderr.startswith("harmony-doctor: error: tool name 'functions.\\x1b[31maaa")


def test_cli_refuses_a_chat_tool_with_control_characters(tmp_path: Path) -> None:
    request = tmp_path / "tf.json"
    name = "ev\u001b]0;PWN\u0007il\u202e"
    request.write_text(json.dumps({"tools": [{"type": "function", "function": {"name": name}}]}))
    result = run(["grammar", "--tools-from", str(request)])
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr == (
        "harmony-doctor: error: tool name 'functions.ev\\x1b]0;PWN\\x07il\\u202e' cannot be a "
        "recipient: it holds a control or invisible character\n"
    )


def test_more_tools_than_a_grammar_takes_are_refused(tmp_path: Path) -> None:
    request = tmp_path / "many.json"
    tools = [{"type": "function", "function": {"name": f"t{i}"}} for i in range(g.MAX_TOOLS + 1)]
    request.write_text(json.dumps({"tools": tools}))
    result = run(["grammar", "--tools-from", str(request)])
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr == (
        "harmony-doctor: error: 10,001 tools declared: a grammar takes at most 10,000 "
        "(llguidance cannot compile about 60,000); declare the tools the model may call\n"
    )


def test_the_most_tools_a_grammar_takes_compile(vocab: Vocab) -> None:
    names = g.narrow_tools(g.recipient_for(f"tool_{i}") for i in range(g.MAX_TOOLS))
    g.validate(g.emit(g.GrammarOptions(tools=names), "lark"), "lark", vocab)


def test_printable_unicode_and_quotes_are_kept_and_quoted(vocab: Vocab) -> None:
    names = g.narrow_tools(g.recipient_for(t) for t in ("naïve_ü", 'a"b\\c', "browser.search"))
    assert names == ("functions.naïve_ü", 'functions.a"b\\c', "browser.search")
    for dialect in ("lark", "gbnf"):
        text = g.emit(g.GrammarOptions(tools=names), dialect)
        assert '"functions.naïve_ü" | "functions.a\\"b\\\\c" | "browser.search"' in text
        g.validate(text, dialect, vocab)


def test_a_literal_never_holds_a_character_that_is_not_printable(vocab: Vocab) -> None:
    for dialect in ("lark", "gbnf"):
        written = g._Writer(dialect).literal("a\x1b\x85\u202e\U000e0001b")
        assert written == '"a\\u001b\\u0085\\u202e\\udb40\\udc01b"'
    g.validate('start: "a\\u202eb"\n', "lark", vocab)  # llguidance reads the escape
