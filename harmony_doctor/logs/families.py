"""Another model family's tool-call markup, and the signs of Harmony: an engine's parse failure
over the former, with none of the latter, is not a Harmony failure (explain and scan both ask)."""

from __future__ import annotations

import re
from typing import Final

from harmony_doctor import specials
from harmony_doctor.lazy_regex import Pattern
from harmony_doctor.models import Kind

# Qwen's `<tool_call>`, Llama's `<function=...>` and `<|python_tag|>`, Mistral's `[TOOL_CALLS]`,
# and the same escaped in a JSON string.
OTHER_FAMILY: Final = Pattern(
    r"</?tool_call>|<function=|</function>|</?parameter[=>]|\[TOOL_CALLS\]|<\|python_tag\|>"
    r"|\\u003c/?(?:function|tool_call)"
)
# `<|end|>` alone is no sign: other families end a turn with it too (Phi-3's chat format).
HARMONY_SIGNS: Final = Pattern(
    specials.written(n for n in specials.NAMES if n != "end") + "|gpt-oss", re.I
)
# The kinds of an engine's parse failure, which may be over any family's output.
ENGINE_KINDS: Final[frozenset[Kind]] = frozenset({"input_parse", "tool_call_parse"})


# Other model families by name, as a paste or a log names the model that failed: a GLM, Qwen,
# Llama 3, Mistral, Gemma, DeepSeek, Phi, Granite, LFM, Kimi, MiniMax, Hermes or PaddleOCR
# model (`llama.cpp`, `llama-server` and `Llama Stack` are engines, not the Llama models).
OTHER_MODEL: Final = Pattern(
    r"\b(?:GLM-?\d|ChatGLM|Qwen\d*|QwQ|Llama[- ]?\d|Meta-Llama|Mi[sx]tral|Devstral|Magistral"
    r"|Gemma[- ]?\d*|DeepSeek|Phi-\d|Granite|LFM\d|Kimi|MiniMax|Hermes|PaddleOCR)",
    re.I,
)


def shows_another_family(text: str) -> bool:
    """Whether `text` shows another family's tool-call markup, or names another model family,
    and shows no sign of Harmony (no markup, no gpt-oss): an engine's generic parse failure
    in it is that model's, not Harmony's."""
    return bool(OTHER_FAMILY.search(text) or OTHER_MODEL.search(text)) and not (
        HARMONY_SIGNS.search(text)
    )


# JavaScript's parsers raise `SyntaxError: Unexpected token X`, X a character of the text (a
# JSON body that is HTML, Node's `...` for a spread it cannot read): no Harmony token at all.
_SYNTAX_ERROR: Final = Pattern(r"\bSyntaxError:\s*$")


def javascript_syntax_error(kind: Kind, token: int | None, text: str, start: int) -> bool:
    """Whether an unexpected token (`kind`) without an id, named by a message at `start` of
    `text`, is a JavaScript parser's: its SyntaxError class right before it, and no sign of
    Harmony in `text` (then it is a Harmony failure however worded)."""
    return (
        kind == "unexpected_token"
        and token is None
        and _SYNTAX_ERROR.search(text, 0, start) is not None
        and HARMONY_SIGNS.search(text) is None
    )
