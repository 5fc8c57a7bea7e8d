"""Another model family's tool-call markup, and the signs of Harmony: an engine's parse failure
over the former, with none of the latter, is not a Harmony failure (explain and scan both ask)."""

from __future__ import annotations

import re
from typing import Final

from harmony_doctor.models import Kind

# Qwen's `<tool_call>`, Llama's `<function=...>` and `<|python_tag|>`, Mistral's `[TOOL_CALLS]`,
# and the same escaped in a JSON string.
OTHER_FAMILY: Final = re.compile(
    r"</?tool_call>|<function=|</function>|</?parameter[=>]|\[TOOL_CALLS\]|<\|python_tag\|>"
    r"|\\u003c/?(?:function|tool_call)"
)
HARMONY_SIGNS: Final = re.compile(
    r"<\|(?:channel|message|start|constrain|call|return)\|>|gpt-oss", re.I
)
# The kinds of an engine's parse failure, which may be over any family's output.
ENGINE_KINDS: Final[frozenset[Kind]] = frozenset({"input_parse", "tool_call_parse"})


def shows_another_family(text: str) -> bool:
    """Whether `text` shows another family's tool-call markup and no sign of Harmony."""
    return bool(OTHER_FAMILY.search(text)) and not HARMONY_SIGNS.search(text)
