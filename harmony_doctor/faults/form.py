"""What a failure form is (faults/catalogue.py holds the one list of them)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from harmony_doctor.models import Kind, Server

FormName = Literal[
    "leftover",
    "leftover_old",
    "unexpected_token",
    "unknown_role",
    "empty_channel",
    "header_eos",
    "missing_role",
    "header_decode",
    "tokens_decode",
    "vocab_load",
    "render_error",
    "ollama_tool",
    "lmstudio_tool",
    "llamacpp_input",
    "recovered_raw",
    "template_content",
    "vllm_unknown_recipient",
    # Engines' own Harmony failures read from pasted threads (issue 20):
    "vllm_two_messages",
    "vllm_preamble",
    "vllm_unknown_channel",
    "llamacpp_end_of_input",
    "llamacpp_peg",
    "llamacpp_arguments",
    "template_thinking",
    "sglang_structure_info",
    "provider_tool_args",
    "ollama_unmapped_tool",
    "trtllm_raw_fallback",
    # Found by readers of their own, not by a message pattern:
    "bare_remainder",  # a header remainder `Some("...")` quoted without its message
    "markup_leak",  # Harmony markup in a returned message's content
    "stripped_markup",  # Harmony text whose special tokens were stripped
    "header_markup",  # a parsed message's recipient or channel holding markup (issue 20)
    "rejected_ids",  # a logged completion with ids openai-harmony rejects (scan/source.py)
    # What an error says in the grammar's terms, in any wording (faults/generic.py, issue 33):
    "said_header_cut",
    "said_header_stop",
    "said_unexpected",
    "said_role",
    "said_unparsed",
    "said_tool_unparsed",
    "said_tool_unknown",
    "said_raw_fallback",
    "said_no_route",
    "said_markup_sent",
    "said_both_fields",
]
Origin = Literal["openai-harmony", "server"]


def phrase(text: str) -> str:
    """A phrase that survives wrapping: any whitespace, or none, between its words."""
    return r"\s*".join(re.escape(word) for word in text.split())


def optional_phrase(text: str) -> str:
    return r"(?:\s*" + phrase(text) + ")?"


@dataclass(frozen=True)
class Form:
    """One way a Harmony failure shows in text."""

    name: FormName
    kind: Kind
    origin: Origin  # openai-harmony's own error, or a server's
    writers: str  # who writes it, in which releases
    examples: tuple[str, ...]  # real texts of the form (tests check the entry against them)
    pattern: str | None = None  # regex source (case-insensitive); None: found by its own reader
    canonical: str | None = None  # the message as its writer prints it (before any detail)
    anchors: tuple[bytes, ...] = ()  # every line that shows the form holds one of these
    keywords: tuple[str, ...] = ()  # every match holds one of these lowercase words
    code: str | None = None  # the rule it reports; None: classify decides from the evidence
    server: Server | None = None  # the server the form alone gives away
    guess: Server | None = None  # the server named when no line says which
    versions: frozenset[int] | None = None  # openai-harmony releases (0.0.N as N, 5 = 0.0.5+)
    output_follows: bool = False  # the model's output may follow on a `Model Output:` line
    generic: bool = False  # a statement in the grammar's terms: tried where no other form matches
