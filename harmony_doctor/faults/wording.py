"""What a form's failure expected and what it found, in words: each form's entry names its wording.

A wording reads `Said`, the facts a found message carries (logs/describe.py fills it from the
hit), and returns (expected, found). A new form names one of these, or a new function of its
own here, in its entry; nothing else lists forms by name or kind.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

HEADER_SHAPE = "<|channel|>CHANNEL [ to=RECIPIENT] [<|constrain|>json] then <|message|>"


@dataclass(frozen=True)
class Said:
    """What a failure's message said, as a wording reads it."""

    code: str  # the rule it reports
    message: str
    words: tuple[str, ...]  # a header remainder's words
    cut: bool  # the remainder was cut by the log before its end
    token: int | None
    token_text: str  # the token's name, or "an ordinary text token"
    role_word: str | None
    context: str | None
    markup: tuple[str, ...]  # the special tokens the message holds, sorted, each once


Wording = Callable[[Said], tuple[str, str]]


def fixed(expected: str, found: str) -> Wording:
    """A wording that says the same whatever the message."""
    return lambda said: (expected, found)


def detail(expected: str) -> Wording:
    """A wording whose found is the message's detail (what follows its first colon)."""
    return lambda said: (expected, _detail(said.message))


# wordings more than one form says
HEADER_DECODE = fixed("header tokens that decode as UTF-8", "invalid UTF-8 in the header")
LLAMACPP_INPUT = detail("output the llama.cpp Harmony parser accepts")
VOCAB_LOAD = detail("o200k_base.tiktoken, local or downloadable")
RENDER = detail("a conversation openai-harmony can render")
RAW_RETURNED = fixed(
    "a stream openai-harmony parses to its end",
    "the parser ended in a non-terminal state; the server returned the raw text "
    "of the last message instead of parsed messages",
)


def header_leftover(said: Said) -> tuple[str, str]:
    expected = f"a header: {HEADER_SHAPE}"
    words = said.words
    if not words:
        return expected, "leftover words (this log does not show them)"
    if said.cut:
        found = (
            f"{len(words)} word(s) openai-harmony could not place before the log cut "
            f"the list at {words[-1]!r}; the header's last one or two words, taken as "
            "recipient and content type, never appear in the message"
        )
    else:
        found = (
            f"{len(words)} word(s) openai-harmony could not place, ending {words[-1]!r}; "
            "it had already taken the header's last one or two words as recipient and "
            "content type, so the words it blames are not the last ones the model wrote"
        )
    recipient = next((w for w in words if w.startswith("to=")), None)
    if said.code == "HD102" and recipient is not None:
        found += (
            f"; {recipient!r} left over means another recipient followed it, or a word "
            "followed the content type (`<|constrain|>json json`)"
        )
    return expected, found


def unexpected_token(said: Said) -> tuple[str, str]:
    expected = "<|start|> (id 200006) to open the next message"
    if said.token is None:
        return expected, "a token (id not logged)"
    return expected, f"token {said.token} ({said.token_text})"


def unknown_role(said: Said) -> tuple[str, str]:
    return (
        "a role (assistant, user, system, developer, tool) or NAME to=RECIPIENT",
        f"role {said.role_word!r}",
    )


def tool_call(said: Said) -> tuple[str, str]:
    """A tool call's arguments that did not parse: the reason its writer gave, and the raw
    text it quotes."""
    err = re.search(r"\berr=(.*)$|\bError:\s*(.*)$", said.message)
    reason = (err.group(1) or err.group(2) or "").strip() if err else _detail(said.message)
    return "JSON arguments after the tool-call header", (
        reason + (f"; raw {said.context!r}" if said.context else "")
    )


def lmstudio_tool(said: Said) -> tuple[str, str]:
    return "a Harmony tool call with JSON arguments", lmstudio_found(said.message, said.context)


def lmstudio_found(message: str, output: str | None) -> str:
    reason = _detail(message) or "no reason given"
    if output:
        return f"{reason}; model output {output[:200]!r}"
    return reason


def unmapped_tool(said: Said) -> tuple[str, str]:
    name = repr(said.context) if said.context else "a function"
    return "a call to one of the request's tools", (
        f"a call to {name}, which the request's tools do not declare"
    )


def provider_tool_args(said: Said) -> tuple[str, str]:
    return "JSON arguments after the tool-call header", (
        "arguments that are not JSON"
        + (f"; the model wrote {said.context[:200]!r}" if said.context else "")
    )


def two_messages(said: Said) -> tuple[str, str]:
    count = re.search(r"but got\s*(\d+)", said.message)
    return "exactly two messages (analysis, then final), as this check takes", (
        f"{count.group(1) if count else 'another number of'} output messages"
    )


def server_rejected(said: Said) -> tuple[str, str]:
    return "a message the server's own Harmony code accepts", (
        f"the server refused {_detail(said.message)!r}"
    )


def header_markup(said: Said) -> tuple[str, str]:
    return f"a {said.context or 'header field'} without markup", (
        f"{', '.join(said.markup)} in the parsed message's {said.context}: special tokens "
        "were read as text (encoded without allowed_special, or strings joined before "
        "encoding), so the next header spilled into it"
    )


def markup_leak(said: Said) -> tuple[str, str]:
    return "plain text in the returned message", (
        f"{', '.join(said.markup)} in {said.context or 'content'}"
    )


def _detail(message: str) -> str:
    head, _, tail = message.partition(":")
    return (tail or head).strip()
