"""What an error says in the Harmony grammar's terms, in any writer's words: the generic forms.

An engine form (faults/engines.py) knows one engine's wording; these know the grammar. A
statement is read by what it names: a special token (by name or id) expected and another found,
the stream running out inside a header, a role no header has, a parser that could not parse the
output or a tool call, a server's check refusing a parsed message, a parser falling back to the
raw text. Each form is an entry of the one catalogue (faults/catalogue.py takes them last, as
`generic` forms), so the log extractor, `scan`'s anchors and its Rust core read them as they
read every form; the extractor tries them only where no other form matches the text
(logs/messages.py), so an engine's own form refines what these find and never competes with it.
tests/faults/test_ablation.py removes each engine form in turn: its examples are still found
here, with the generic code of the fault they state, on the same line.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Final, Protocol, TypeVar

from harmony_doctor import specials
from harmony_doctor.faults import wording
from harmony_doctor.faults.form import Form

# A special token as an error names it: `<|end|>`, its id, quoted or not.
SPECIAL_NAME: Final = specials.ANY
SPECIAL_ID: Final = r"2000(?:0[2-8]|12)"
_Q: Final = r"""['"`(]?"""
_TOKEN: Final = rf"(?:special\s*)?(?:token\s*)?{_Q}"
_CLOSE: Final = r"""['"`)]?"""
# What an error says it expected where a header must go on: <|message|>, <|channel|>,
# <|constrain|> (or their ids, or openai-harmony's names for them: `(Message) 200008`).
_HEADER_GOES_ON: Final = (
    "(?:" + specials.written(n for n in specials.HEADER_NAMES if n != "start") + r"|20000[358]"
    r"|\(?(?:Message|Channel|ConstrainedFormat)\)?(?:\s*20000[358])?)"
)
_START: Final = r"(?:<\|start\|>|200006|\(?Start\)?(?:\s*200006)?)"
_STOP: Final = rf"(?:{specials.STOP}|20000[27]|200012)"
_ANY_SPECIAL: Final = rf"(?:{SPECIAL_NAME}|{SPECIAL_ID})"
_RAN_OUT: Final = (
    r"(?:(?:but\s*)?(?:(?:was\s*|were\s*)?out\s*of\s*tokens|ran\s*out(?:\s*of\s*tokens)?"
    r"|reached\s*(?:the\s*)?end(?:\s*of\s*(?:stream|input|tokens|output))?"
    r"|(?:found|got|hit|saw)\s*(?:an?\s*)?(?:EOS|end\s*of\s*(?:stream|input|tokens|output))))"
)
_FOUND: Final = r"(?:but\s*)?(?:found|got|saw|received|instead\s*got|instead\s*found)"

# An error's words where nothing failed, read in the text before the statement on its line:
# - source code that would raise it: a string literal opened by a raising call and still open
#   (`anyhow::bail!("...`, `return Err(anyhow!("...`, `raise HarmonyError(f"...`,
#   `throw new Error("...`, `errors.New("...`, `panic!("...`);
# - the words as a name: a JSON key or field quoted right after the word (`with key `...``);
# - the words as documentation: a line labelled an example or a pattern (`Example: ...`).
NOT_A_STATEMENT: Final = (
    r"(?:\b(?:bail|anyhow|panic|unreachable|format_err)!|\bErr|\braise\s+[\w.]+"
    r"|\bthrow\s+new\s+[\w.]+|\berrors\.New|\bfmt\.Errorf|\b[\w:]*Error::new)"
    r"""\s*\(\s*(?:[\w:]+!\s*\(\s*)?[frb]?["'`][^"'`]*$"""
    r"""|\b(?:key|field|property|attribute)\s*[`'"]$"""
    # - the exception caught, not raised: `except openai_harmony.HarmonyError: pass`
    r"|\bexcept\s*\(?(?:[\w.]+\s*,\s*)*[\w.]*$"
    r"""|^\W*(?i:(?:error\s+)?(?:example|pattern|sample|template)s?|e\.g\.)\s*\d*\s*:\s*[`'"]?$"""
)


@cache
def _not_a_statement() -> re.Pattern[str]:
    """NOT_A_STATEMENT compiled at its first use (a statement found): compiling it was 1 ms of
    every start, and a clean scan's log never needs it."""
    return re.compile(NOT_A_STATEMENT)


class _Hit(Protocol):
    @property
    def start(self) -> int: ...


Hit = TypeVar("Hit", bound=_Hit)


def stated(text: str, hit: Hit | None) -> Hit | None:
    """A statement found in `text` (where it starts: `hit.start`), unless it is no failure
    that happened (source code raising it, a key's name: see above)."""
    if hit is None or _not_a_statement().search(text, 0, hit.start) is not None:
        return None
    return hit


GENERIC_FORMS: Final[tuple[Form, ...]] = (
    Form(
        "said_header_cut",
        "header_eos",
        "server",
        "any parser saying the tokens ended where a header goes on",
        (
            "expected special token <|message|> but out of tokens",
            "ran out of tokens while parsing the message header",
            # openai-harmony's own non-streaming parser (its encoding.rs, Parser)
            "Expected special token (Message), but out of tokens",
            "Expected message start token but ran out of tokens",
            # the next message's <|start|>: the reply stopped between messages (a length cut)
            "Expected special token (<|start|>), but out of tokens",
        ),
        pattern=rf"expected\s*{_TOKEN}(?:{_HEADER_GOES_ON}|{_START}){_CLOSE}\s*,?\s*{_RAN_OUT}"
        + rf"|expected\s*(?:the\s*)?message\s*start\s*token\s*,?\s*{_RAN_OUT}"
        + r"|(?:ran\s*out\s*of\s*tokens|unexpected\s*end\s*of\s*(?:stream|input|tokens|output))"
        + r"\s*(?:while|when|in|inside|during|before)\s*(?:\w+\s*){0,3}?(?:message|harmony)\s*"
        + r"header",
        canonical=None,
        anchors=(b"xpected", b"out of tokens", b"nexpected end of"),
        keywords=("expected", "ran"),
        generic=True,
    ),
    Form(
        "said_header_stop",
        "header_eos",
        "server",
        "any parser saying it found a stop token where a header goes on",
        ("expected token <|message|>, but found <|end|>",),
        pattern=rf"expected\s*{_TOKEN}{_HEADER_GOES_ON}{_Q}\s*,?\s*{_FOUND}\s*{_TOKEN}{_STOP}",
        anchors=(b"xpected",),
        keywords=("expected",),
        code="HD142",
        generic=True,
    ),
    Form(
        "said_unexpected",
        "unexpected_token",
        "server",
        "any parser naming the special token it found where <|start|> belongs",
        (
            "expected special token <|start|> but found <|return|>",
            "Unexpected special token 200012 in completion",
            # openai-harmony's own non-streaming parser (its encoding.rs, expect_special)
            "Expected special token (Start) 200006 but got 200005",
            "exception caught: unexpected token 200005",
            "fix openai_harmony.HarmonyError: Unexpected token",
        ),
        pattern=rf"expected\s*{_TOKEN}{_START}{_Q}\s*,?\s*{_FOUND}\s*{_TOKEN}"
        rf"(?P<found>{_ANY_SPECIAL}|\d{{1,6}}\b)"
        rf"|unexpected\s*special\s*token\s*{_Q}(?P<bare>{_ANY_SPECIAL})"
        # an engine's exception naming a token past the text ids, or its id cut (`...`); a
        # JSON parser's `Unexpected token } in JSON` names a character, never an id
        r"|unex(?:pec|cep)ted\s*token\s*(?:id\s*)?[:=]?\s*(?P<id>(?:199|20[01])\d{3})\b"
        r"|unex(?:pec|cep)ted\s*token\s*\.{3}"
        # openai-harmony's own exception with its ids cut off where the line or quote ends
        r"""|HarmonyError\s*:?\s*unexpected\s*token\s*(?:$|[`'"])""",
        anchors=(b"xpected", b"xcepted"),
        keywords=("expected", "excepted"),
        generic=True,
    ),
    Form(
        "said_empty_channel",
        "empty_channel",
        "server",
        "any parser saying <|channel|> came with no channel name, its words cut by a person",
        ("=> ❌ `channel marker present but no ...`",),
        pattern=r"channel\s*marker\s*present\s*but\s*no\s*\.{3}",
        anchors=(b"channel marker",),
        keywords=("channel",),
        generic=True,
    ),
    Form(
        "said_role",
        "unknown_role",
        "server",
        "any parser naming a role no Harmony header has",
        ("invalid role: 'assistantassistant'",),
        pattern=r"(?:invalid|unrecognized|unrecognised|unsupported|unexpected|bad)\s*role\s*"
        r"""(?:name\s*)?[:=]?\s*['"`]?(?P<role>(?:<\|start\|>)?(?:assistant|user|system|"""
        r"developer|tool)\w+|<\|\w+\|>\w*)",
        anchors=(
            b"nvalid role",
            b"nrecognized role",
            b"nrecognised role",
            b"nsupported role",
            b"nexpected role",
            b"ad role",
        ),
        keywords=("role",),
        generic=True,
    ),
    Form(
        "said_unparsed",
        "input_parse",
        "server",
        "any server saying its parser could not read the model's output",
        (
            "failed to parse model output at position 118: <|channel|>commentary",
            "the model produced output that does not match the expected harmony format",
            "unparsed harmony output: <|channel|>commentary??",
            "unexpected text after end of message",
            # the position left out, as a person quotes the message
            "server-500 error messages `Failed to parse input at pos` while running",
        ),
        pattern=r"(?:fail\w*|could\s*not|cannot|can't|unable)\s*(?:to\s*)?parse\s*(?:the\s*)?"
        r"(?:model\s*)?(?:input|output|response|completion|message)s?\s*(?:text\s*)?"
        r"at\s*(?:pos(?:ition)?|char(?:acter)?|offset|index)\s*(?:\d+|$|[`'\"])"
        r"|output\s*(?:that\s*)?(?:does\s*not|doesn't|did\s*not)\s*match\s*(?:the\s*)?"
        r"expected\s*[\w-]*\s*format"
        r"|unparsed\s*[\w-]*\s*output\s*:"
        r"|unexpected\s*(?:content|text|characters?)\s*(?:at|after)\s*(?:the\s*)?end\s*of\s*"
        r"(?:input|output|message)",
        anchors=(b"arse", b"match the expected", b"match expected", b"end of"),
        keywords=("pars", "match", "expected"),
        code="HD186",
        generic=True,
    ),
    Form(
        "said_tool_unparsed",
        "tool_call_parse",
        "server",
        "any server saying it could not parse the tool call the model wrote",
        (
            "could not parse function call: invalid JSON in arguments",
            "error while parsing tool_call arguments: Expecting value: line 1 column 1",
        ),
        pattern=r"(?:error|fail\w*|could\s*not|cannot|can't|unable)\s*(?:to\s*|while\s*)?"
        r"pars(?:e|ing)\s*(?:the\s*)?(?:tool[\s_-]*call|function[\s_-]*call|arguments)",
        anchors=(b"arse", b"arsing", b"ARSE"),
        keywords=("pars",),
        code="HD180",
        generic=True,
    ),
    Form(
        "said_tool_unknown",
        "tool_call_parse",
        "server",
        "any Harmony parser saying the model called a function the request did not declare",
        (
            "harmony parser: unknown function 'ask_followup_question'",
            # the name the parser could not map back, left out as a person quotes it
            "harmony parser: no reverse mapping found",
        ),
        pattern=r"no\s*(?:reverse\s*)?mapping\s*(?:found\s*)?for\s*(?:the\s*)?(?:function|tool)"
        r"|harmony\s*parser\s*:?\s*(?:(?:unknown|undeclared|unmapped)\s*(?:function|tool)"
        r"|no\s*(?:reverse\s*)?mapping)",
        anchors=(b"mapping", b"armony parser"),
        keywords=("mapping", "harmony"),
        code="HD207",
        generic=True,
        wording=wording.unmapped_tool,
    ),
    Form(
        "said_raw_fallback",
        "recovered_raw_output",
        "server",
        "any server saying its Harmony parser failed and it returned the raw text",
        (
            "harmony parse failed at token 57; falling back to raw text",
            "stream ended in a non-terminal state",
        ),
        pattern=r"non-terminal\s*state"
        r"|(?:return\w*|f[ae]ll\w*\s*back\s*to)\s*(?:the\s*)?(?:recovered\s*)?raw\s*(?:text|output)",
        anchors=(b"non-terminal", b"raw text", b"raw output"),
        keywords=("terminal", "raw"),
        code="HD176",
        generic=True,
    ),
    Form(
        "said_no_route",
        "server_rejected",
        "server",
        "any server whose own check refused a message openai-harmony parsed",
        (
            "unsupported recipient: 'functions.get_weather'",
            "invalid channel: 'commentary'",
            "analysis message has no recipient",
            "expected one parsed message, found 2",
            "tool_choice=required is not supported for gpt-oss",
        ),
        pattern=r"(?:unknown|unsupported|invalid|unexpected)\s*(?:recipient|channel)\s*:?\s*"
        r"""['"`]?(?:None\b|<\||functions\b|browser\b|python\b|container\b|analysis\b"""
        r"|commentary\b|final\b)"
        r"|(?:analysis|commentary|final)\s*(?:channel\s*)?message\s*(?:without|with\s*no|has\s*no"
        r"|missing)\s*(?:an?\s*)?recipient"
        r"|expected\s*(?:exactly\s*)?(?:one|two|\d+)\s*(?:output|parsed|harmony)\s*messages?"
        r"|not\s*(?:used|supported|implemented)\s*(?:with|for|by)\s*(?:the\s*)?(?:harmony|gpt-oss)",
        anchors=(
            b"recipient",
            b"nknown channel",
            b"nsupported channel",
            b"nvalid channel",
            b"nexpected channel",
            b"output message",
            b"parsed message",
            b"armony message",
            b"with Harmony",
            b"with harmony",
            b"for Harmony",
            b"for harmony",
            b"with gpt-oss",
            b"for gpt-oss",
            b"by Harmony",
            b"by harmony",
        ),
        keywords=("recipient", "channel", "expected", "harmony", "gpt-oss"),
        code="HD194",
        generic=True,
    ),
    Form(
        "said_markup_sent",
        "template_content",
        "server",
        "any template or server refusing Harmony markup sent back in a message's content",
        ("assistant message contains <|channel|> markup in its content",),
        pattern=r"contain\w*\s*<\|\w+\|>\s*(?:tags?|markup|tokens?)?\s*in\s*(?:the\s*|its\s*)?"
        r"(?:content|message)",
        anchors=(b"in the content", b"in content", b"in its content", b"in the message"),
        keywords=("contain",),
        code="HD184",
        generic=True,
    ),
    Form(
        "said_both_fields",
        "template_content",
        "server",
        "any template refusing a tool-call turn that carries its reasoning twice",
        ("must not send both reasoning_content and content in a tool-call turn",),
        pattern=r"(?:cannot|can't|must\s*not|should\s*not)\s*(?:pass|send|have|set|include)\s*"
        r"both\s*(?:content|thinking|reasoning\w*)\s*and\s*(?:thinking|reasoning\w*|content)",
        anchors=(b"both",),
        keywords=("both",),
        code="HD188",
        generic=True,
    ),
    Form(
        "said_harmony_error",
        "unknown_error",
        "openai-harmony",
        "openai-harmony's exception, named in full, in words no other form knows: a newer or "
        "patched release, an error outside its parser, a message cut short",
        (
            "openai_harmony.HarmonyError: Invalid token for decoding: 99999999",
            "openai_harmony.HarmonyError: unknown encoding name: HarmonyGptOss",
            "openai_harmony.HarmonyError: Unexpected token 12",
        ),
        # the exception as Python prints it, module and all: a name ending so, a field, a
        # docstring's `HarmonyError: when ...`, another project's HarmonyError, a count
        # (`HarmonyError: 3`) are no openai-harmony error raised
        pattern=r"\bopenai_harmony\.HarmonyError[ \t]*:[ \t]*[^\s\d]",
        anchors=(b"openai_harmony.HarmonyError",),
        keywords=("openai_harmony",),
        code="HD179",
        generic=True,
        fallback=True,
        wording=wording.detail("a stream or conversation openai-harmony accepts"),
    ),
)
