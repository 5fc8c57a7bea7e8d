"""The one catalogue of failure forms: every message that reports a Harmony failure, once.

A form is one way a failure shows in text: openai-harmony's own error messages (in every
release's wording) and the Harmony failures servers write in their own words. Each entry says
how to recognise it (`pattern`), what the byte-level scan searches for to find the lines that
may hold it (`anchors`), what kind of failure it is, which rule (code) it reports when the form
alone decides, and who writes it. The log extractor (logs/messages.py, logs/describe.py), the
scan prefilter and the Rust core (scan/core.py hands the anchors over), and the mapping of
openai-harmony's errors to kinds all read this table; nothing restates it.

Adding a form: one `Form` below or, for an engine's own wording, in faults/engines.py (with a
real example of its text), its rule in rules.py when it reports a new code, and tests: nothing
else, Rust included (the anchors are handed over when the core is built).
tests/faults/test_catalogue.py checks every entry against its examples, its anchors and the
rules; tests/faults/test_one_entry.py adds a form and finds its example.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Final, TypeGuard, get_args

from harmony_doctor import specials
from harmony_doctor.faults import wording
from harmony_doctor.faults.engines import ENGINE_FORMS
from harmony_doctor.faults.form import Form as Form
from harmony_doctor.faults.form import FormName as FormName
from harmony_doctor.faults.form import optional_phrase, phrase
from harmony_doctor.faults.generic import GENERIC_FORMS

# Form and FormName are re-exported: every reader takes them from the catalogue.
from harmony_doctor.lazy_regex import Pattern
from harmony_doctor.models import ErrorKind, Kind

FORMS: Final[tuple[Form, ...]] = (
    Form(
        "leftover",
        "header_leftover",
        "openai-harmony",
        'openai-harmony 0.0.1-0.0.8 (a list of words up to 0.0.4, Some("...") from 0.0.5)',
        (
            'unexpected tokens remaining in message header: Some("to=functions.get_weather")',
            'unexpected tokens remaining in message header: ["\u2013\u2013commentary"]',
        ),
        pattern=phrase("unexpected tokens remaining in message header"),
        canonical="unexpected tokens remaining in message header",
        anchors=(b"tokens remaining",),
        keywords=("unexpected",),
        wording=wording.header_leftover,
    ),
    Form(
        "leftover_old",
        "header_leftover",
        "openai-harmony",
        "openai-harmony 0.0.1 and pre-release builds",
        (
            "Could not parse header: too many tokens remaining after extracting content-type "
            "and recipient",
        ),
        pattern=phrase("could not parse header:")
        + r"\s*"
        + phrase("too many tokens remaining")
        + optional_phrase("after extracting content-type and recipient"),
        canonical="Could not parse header: too many tokens remaining after extracting "
        "content-type and recipient",
        anchors=(b"tokens remaining",),
        keywords=("parse",),
        versions=frozenset({1}),
        wording=wording.header_leftover,
    ),
    Form(
        "unexpected_token",
        "unexpected_token",
        "openai-harmony",
        "openai-harmony 0.0.1-0.0.8",
        ("Unexpected token 200002 while expecting start token 200006",),
        pattern=phrase("unexpected token")
        + r"\s*(?P<token>\d+|N)\b\s*"
        + r"while(?:\s*expecting(?:\s*start\s*token(?:\s*(?P<expected>\d+))?)?)?",
        anchors=(b"expecting start token",),
        keywords=("unexpected",),
        wording=wording.unexpected_token,
    ),
    Form(
        "unknown_role",
        "unknown_role",
        "openai-harmony",
        "openai-harmony 0.0.1-0.0.8",
        ("Unknown role: assistantassistant", "Unknown role: <|start|>assistant"),
        pattern=phrase("unknown role:"),
        canonical="Unknown role:",
        anchors=(b"nknown role",),
        keywords=("role",),
        wording=wording.unknown_role,
    ),
    Form(
        "empty_channel",
        "empty_channel",
        "openai-harmony",
        "openai-harmony 0.0.1-0.0.8",
        ("channel marker present but no channel value found in header",),
        pattern=phrase("channel marker present but no channel value")
        + optional_phrase("found in header"),
        canonical="channel marker present but no channel value found in header",
        anchors=(b"channel marker",),
        keywords=("channel",),
        wording=wording.fixed("a channel name right after <|channel|>", "<|channel|> then nothing"),
    ),
    Form(
        "header_eos",
        "header_eos",
        "openai-harmony",
        "openai-harmony 0.0.1-0.0.8",
        ("Unexpected EOS while waiting for message header to complete",),
        pattern=phrase("unexpected EOS while waiting for message header")
        + optional_phrase("to complete"),
        canonical="Unexpected EOS while waiting for message header to complete",
        anchors=(b"Unexpected EOS",),
        keywords=("unexpected",),
        wording=wording.fixed("<|message|> to close the header", "end of stream inside the header"),
    ),
    Form(
        "missing_role",
        "missing_role",
        "openai-harmony",
        "openai-harmony 0.0.1-0.0.8",
        ("message header did not contain a role",),
        pattern=phrase("message header did not contain a role"),
        canonical="message header did not contain a role",
        anchors=(b"contain a role",),
        keywords=("role",),
        wording=wording.fixed("a role after <|start|>", "<|message|> right after <|start|>"),
    ),
    Form(
        "header_decode",
        "header_decode",
        "openai-harmony",
        "openai-harmony 0.0.1-0.0.8",
        ("could not decode header",),
        pattern=phrase("could not decode header"),
        canonical="could not decode header",
        anchors=(b"decode header",),
        keywords=("decode",),
        wording=wording.HEADER_DECODE,
    ),
    Form(
        # Lenient parsing (strict=False) decodes a header cut short by a stop token as text.
        "tokens_decode",
        "header_decode",
        "openai-harmony",
        "openai-harmony 0.0.5-0.0.8 with strict=False",
        (
            "Could not decode tokens: Invalid utf-8 sequence: invalid utf-8 sequence of 1 bytes "
            "from index 86",
        ),
        pattern=phrase("could not decode tokens"),
        canonical="Could not decode tokens",
        anchors=(b"decode tokens",),
        keywords=("decode",),
        wording=wording.HEADER_DECODE,
    ),
    Form(
        "vocab_load",
        "vocab_load",
        "openai-harmony",
        "openai-harmony's load_harmony_encoding, offline or behind a proxy",
        ("error downloading or loading vocab file: failed to download or load vocab",),
        pattern=phrase("error downloading or loading vocab file"),
        canonical="error downloading or loading vocab file",
        anchors=(b"vocab file",),
        keywords=("vocab",),
        code="HD171",
        wording=wording.VOCAB_LOAD,
    ),
    Form(
        "vocab_file",
        "vocab_load",
        "openai-harmony",
        "openai-harmony's vocabulary loader (tiktoken-rs) in its own words",
        (
            "failed to download or load vocab file",
            "invalid tiktoken vocab file: No such file or directory (os error 2)",
            "the env var TIKTOKEN_ENCODINGS_BASE is not set, or invalid",
        ),
        pattern=phrase("failed to download or load vocab file")
        + "|"
        + phrase("invalid tiktoken vocab file")
        + r"|TIKTOKEN_ENCODINGS_BASE\s*is\s*not\s*set",
        # (each anchor is one of at most 64 the scan searches at once: tests/scan)
        anchors=(b"vocab file", b"TIKTOKEN_ENCODINGS_BASE"),
        keywords=("vocab", "tiktoken"),
        code="HD171",
        wording=wording.VOCAB_LOAD,
    ),
    Form(
        "render_error",
        "render_error",
        "openai-harmony",
        "openai-harmony's render_conversation",
        ("invalid conversation JSON: missing field `role` at line 1 column 2",),
        pattern=phrase("invalid conversation JSON"),
        canonical="invalid conversation JSON",
        anchors=(b"conversation JSON",),
        keywords=("conversation",),
        code="HD175",
        wording=wording.RENDER,
    ),
    Form(
        "render_refused",
        "render_error",
        "openai-harmony",
        "openai-harmony's render_conversation and encode, in their own words",
        (
            "Tools should have a name!",
            "render failed: Tools should have a name!",
            "token 200012 was specified as a stop token, but is not mapped",
            "could not render stop token",
            "Encountered text corresponding to disallowed special token '<|start|>'.",
        ),
        pattern=phrase("Tools should have a name")
        + r"|specified\s*as\s*a\s*stop\s*token\s*,?\s*but\s*is\s*not\s*mapped"
        + r"|could\s*not\s*render\s*stop\s*token"
        + r"|disallowed\s*special\s*token\s*['\"`]?"
        + specials.ANY,
        anchors=(b"should have a name", b"stop token", b"disallowed special token"),
        keywords=("tools", "stop", "disallowed"),
        code="HD175",
        wording=wording.RENDER,
    ),
    Form(
        "ollama_tool",
        "tool_call_parse",
        "server",
        "Ollama's Harmony parser (harmonyparser.go)",
        ("error parsing tool call: raw='{\"city\": 1', err=unexpected end of JSON input",),
        pattern=phrase("error parsing tool call"),
        canonical="error parsing tool call",
        anchors=(b"tool call",),
        keywords=("tool",),
        code="HD181",
        server="ollama",
        wording=wording.tool_call,
    ),
    Form(
        "lmstudio_tool",
        "tool_call_parse",
        "server",
        "LM Studio's Harmony tool-call parser",
        ("Failed to parse tool call: Unexpected end of JSON input",),
        # Not a provider's "Failed to parse tool call arguments as JSON" (provider_tool_args).
        pattern=phrase("failed to parse tool call") + r"(?!\s*arguments\b)",
        canonical="Failed to parse tool call",
        anchors=(b"tool call",),
        keywords=("tool",),
        code="HD182",
        guess="lmstudio",
        output_follows=True,
        wording=wording.lmstudio_tool,
    ),
    Form(
        "llamacpp_input",
        "input_parse",
        "server",
        "llama.cpp's chat parser (common/chat.cpp)",
        ("Failed to parse input at pos 42: <|channel|>commentary",),
        pattern=phrase("failed to parse input at pos") + r"(?:ition)?\s*(?P<pos>\d+)",
        anchors=(b"parse input at pos",),
        keywords=("parse",),
        code="HD183",
        server="llama.cpp",
        wording=wording.LLAMACPP_INPUT,
    ),
    Form(
        # A server that caught openai-harmony's error at the end of the stream and returned the
        # raw text (vLLM's HarmonyParser.flush since PRs #47062, #47379).
        "recovered_raw",
        "recovered_raw_output",
        "server",
        "vLLM's HarmonyParser.flush (PRs #47062, #47379)",
        (
            "Harmony parser ended in a non-terminal state; returning the recovered raw output.",
            "returning the recovered raw output",
        ),
        pattern=r"(?:harmony\s*)?"
        + phrase("parser ended in a non-terminal state")
        + r"(?:[;,.:]?\s*"
        + phrase("returning the recovered raw output")
        + r"\.?)?"
        + "|"
        + r"(?<![;,.:]\s)(?<![;,.:])"  # not the tail of the first form, wrapped apart
        + phrase("returning")
        + r"\s*(?:the\s*)?"
        + phrase("recovered raw output")
        + r"\.?",
        canonical="Harmony parser ended in a non-terminal state; returning the recovered raw "
        "output.",
        anchors=(b"non-terminal state", b"recovered raw output"),
        keywords=("parse", "recovered"),
        code="HD176",
        wording=wording.RAW_RETURNED,
    ),
    Form(
        "template_content",
        "template_content",
        "server",
        "the gpt-oss chat template (raise_exception), as llama.cpp, mlx-lm, transformers and "
        "other Jinja servers run it",
        (
            "You have passed a message containing <|channel|> tags in the content field. "
            "Instead of doing this, you should pass analysis messages",
        ),
        pattern=r"(?:you\s*have\s*)?"
        + phrase("passed a message containing <|channel|> tags in the content field"),
        canonical="You have passed a message containing <|channel|> tags in the content field",
        anchors=(b"tags in the content",),
        keywords=("channel",),
        code="HD184",  # the model's own template: the wording names no server
        wording=wording.fixed(
            "assistant content without Harmony markup",
            "<|channel|>...<|message|> markup in a message's content field",
        ),
    ),
    Form(
        # vLLM's Responses API maps each parsed message to an output item and refuses a
        # recipient it has no route for (entrypoints/harmony_utils.py, parse_output_message).
        "vllm_unknown_recipient",
        "server_rejected",
        "server",
        "vLLM's Responses API (harmony_utils.py parse_output_message), 0.10.2 to late 2025",
        (
            "ValueError: Unknown recipient: <|constrain|>functions.get_horoscope",
            "Unknown recipient: None",
        ),
        # Only the recipients a gpt-oss message has (none, markup, a tool namespace): other
        # programs write "Unknown recipient: bob" too.
        pattern=phrase("unknown recipient:")
        + r"(?=\s*(?:None\b|<\||(?:functions|browser|python|container)\b))",
        canonical="Unknown recipient:",
        anchors=(b"nknown recipient",),
        keywords=("recipient",),
        code="HD185",
        wording=wording.server_rejected,
    ),
    *ENGINE_FORMS,  # engines' own Harmony failures (faults/engines.py)
    Form(
        "bare_remainder",
        "header_leftover",
        "openai-harmony",
        "a header remainder pasted without its message (logs/messages.py reads it)",
        ('Some("<|constrain|>json<|end|><|start|>assistant")',),
        wording=wording.header_leftover,
    ),
    Form(
        "markup_leak",
        "markup_leak",
        "server",
        "any server that returns unparsed output (logs/messages.py reads it)",
        ('"content": "<|channel|>final<|message|>Hi"',),
        code="HD205",
        wording=wording.markup_leak,
    ),
    Form(
        "stripped_markup",
        "stripped_markup",
        "server",
        "vLLM's `output:` log field, clients decoding with skip_special_tokens (logs/stripped.py)",
        ("analysisThe user greets.assistantfinalHello!",),
        code="HD206",
        wording=wording.fixed(
            "Harmony text with its special tokens", "text with the special tokens removed"
        ),
    ),
    Form(
        # openai/harmony#84: a parsed message whose recipient holds the next header. Special
        # tokens encoded as text (no allowed_special) or strings glued before encoding.
        "header_markup",
        "markup_leak",
        "server",
        "openai-harmony's parsed messages, printed by clients and servers (logs/messages.py)",
        ('"channel": "analysis", "recipient": "er\\".<|end|><|start|>assistant"',),
        code="HD203",
        wording=wording.header_markup,
    ),
    Form(
        "rejected_ids",
        "rejected_ids",
        "server",
        "vLLM's request log (--enable-log-outputs), corrupt or cut (scan/source.py reads it)",
        (
            "Generated response chatcmpl-x: output: 'x', output_token_ids: "
            "[200005, 999999999, 200008], finish_reason: stop",
        ),
        code="HD177",
    ),
    *GENERIC_FORMS,  # what errors say in the grammar's terms, any writer (faults/generic.py)
)

FORM: Final[dict[FormName, Form]] = {form.name: form for form in FORMS}

# openai-harmony raises every error above as this exception: a line naming it is read even
# when its message is one this catalogue does not know yet.
EXCEPTION_ANCHORS: Final = (b"HarmonyError",)

# What the byte-level scan searches for (both cores, in this order): a line holding none of
# these holds no failure message.
ERROR_ANCHORS: Final[tuple[bytes, ...]] = tuple(
    dict.fromkeys((*EXCEPTION_ANCHORS, *(a for form in FORMS for a in form.anchors)))
)

# The fields whose value a server returns to the client: Harmony markup in one is a leak.
LEAK_FIELDS: Final = ("content", "reasoning_content", "reasoning", "text", "output_text", "name")
# A parsed message's header fields: markup in one (but `<|constrain|>`, HD202's) is a header_markup.
HEADER_FIELDS: Final = ("recipient", "channel", "content_type")
_WS = r"[ \t\n\r\x0C\x0B]"
# A line holding Harmony markup (`<|`) matters when it also shows a form found on such lines:
# a logged field that returns text (markup_leak), or a header remainder quoted on its own
# (bare_remainder: `Some("...` or `["...`). Both byte-level cores take this rule from here.
MARKUP_LINE: Final = (
    "(?i)(?:"
    + "|".join((*LEAK_FIELDS, *HEADER_FIELDS))
    + ")[\"']?"
    + _WS
    + "*[:=]"
    + _WS
    + "*[\"']"
    "|(?:Some\\(|\\[)" + _WS + '*\\\\*"'
).encode()

# The message forms, by name, in the order they are tried (the earliest match in a text wins;
# on a tie, the first form here).
MESSAGE_FORMS: Final[tuple[Form, ...]] = tuple(f for f in FORMS if f.pattern is not None)
KEYWORDS: Final[tuple[str, ...]] = tuple(
    dict.fromkeys(k for form in MESSAGE_FORMS for k in form.keywords)
)

# Kinds whose message ends in text the model wrote (a role, leftover words, a tool call,
# content): what `scan --redact` hashes.
QUOTING_KINDS: Final[frozenset[Kind]] = frozenset(
    {
        "header_leftover",
        "markup_leak",
        "unknown_role",
        "tool_call_parse",
        "input_parse",
        "template_content",
        "stripped_markup",
    }
)

_PARSER_KINDS: Final = frozenset(get_args(ErrorKind))


def is_parser_kind(kind: Kind) -> TypeGuard[ErrorKind]:
    """Whether `kind` is one openai-harmony's parser raises (a token stream can show it)."""
    return kind in _PARSER_KINDS


@cache
def _harmony_patterns() -> tuple[tuple[ErrorKind, Pattern[str]], ...]:
    """Each compiled where a message is first tried against it (in order, until one matches)."""
    return tuple(
        (form.kind, Pattern(form.pattern, re.I))
        for form in MESSAGE_FORMS
        if form.origin == "openai-harmony" and is_parser_kind(form.kind) and form.pattern
    )


def kind_of_error(message: str) -> ErrorKind | None:
    """The kind of an openai-harmony parser error message, or None if it is not one."""
    for kind, pattern in _harmony_patterns():
        if pattern.search(message):
            return kind
    return None
