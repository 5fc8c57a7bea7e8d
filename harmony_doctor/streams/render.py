"""Chat requests -> the Harmony prompt openai-harmony renders, with the multi-turn pitfalls.

Two ways a server can turn a chat into a Harmony conversation:
- `harmony` (default), as openai-harmony's documentation describes: request system and developer
  messages become the developer message's instructions, tools its `functions` namespace;
  assistant reasoning goes on `analysis`, content on `final` (or `commentary` next to tool
  calls), tool calls on `commentary to=functions.NAME <|constrain|>json`, tool results come from
  `functions.NAME` to the assistant on `commentary`.
- `passthrough`, as early servers did (vLLM 0.10.x `parse_chat_input`): every message keeps its
  role and text and gets no channel, no recipient and no author name; without tools the system
  message drops the `commentary` channel.
Both start with openai-harmony's own system message (reasoning effort, knowledge cutoff,
channels). The tokens come from `render_conversation_for_completion`, so they end with
`<|start|>assistant`, like a server's prompt.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from harmony_doctor import specials
from harmony_doctor.choices import Style
from harmony_doctor.errors import InputError
from harmony_doctor.harmony.vocab import LONGEST_TOKEN_BYTES, Vocab
from harmony_doctor.inputs.lengths import MAX_COMPLETION_TOKENS
from harmony_doctor.models import RenderedPrompt, RenderWarning

_EFFORTS = {"low": "Low", "medium": "Medium", "high": "High"}
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_MARKUP = re.compile(specials.ANY)
_ROLES = ("system", "developer", "user", "assistant", "tool")
# The roles of which each request message renders as one message at least (the harmony style
# folds system and developer messages into one, and every message of the passthrough style
# renders).
_FRAMED = frozenset({"user", "assistant", "tool"})


def load_chat(text: str) -> dict[str, Any]:
    """A chat request from JSON text: an object with `messages`, or a bare list of messages."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"chat is not JSON: {exc.msg} at line {exc.lineno}") from None
    except RecursionError:
        raise InputError("chat JSON is nested too deeply") from None
    except ValueError as exc:  # e.g. an integer with more digits than Python converts
        raise InputError(f"chat is not usable JSON: {exc}") from None
    if isinstance(doc, list):
        doc = {"messages": doc}
    if not isinstance(doc, dict) or not isinstance(doc.get("messages"), list):
        raise InputError("chat must be a JSON object with a `messages` list (or a list)")
    for index, message in enumerate(doc["messages"]):
        if not isinstance(message, dict):
            raise InputError(f"messages[{index}] is not an object")
        if message.get("role") not in _ROLES:
            raise InputError(
                f"messages[{index}] has role {message.get('role')!r}; "
                f"expected one of {', '.join(_ROLES)}"
            )
    return doc


@dataclass
class _Builder:
    """Collects the Harmony conversation and the warnings while walking the request."""

    style: Style
    messages: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[RenderWarning] = field(default_factory=list)
    origins: list[int | None] = field(default_factory=list)  # request index of each message
    calls: dict[str, str] = field(default_factory=dict)  # tool_call_id -> function name

    def add(self, origin: int | None, message: dict[str, Any]) -> None:
        self.messages.append(message)
        self.origins.append(origin)

    def warn(self, code: str, origin: int | None, text: str) -> None:
        self.warnings.append(RenderWarning(code, origin, text))


def render_chat(
    chat: Mapping[str, Any],
    vocab: Vocab,
    style: Style = "harmony",
    date: str | None = None,
    keep_analysis: bool = False,
) -> RenderedPrompt:
    """Render a chat request with openai-harmony and list the pitfalls found on the way."""
    framed = [m for m in chat["messages"] if style == "passthrough" or m["role"] in _FRAMED]
    if _MESSAGE_TOKENS * len(framed) > MAX_COMPLETION_TOKENS:  # before any is converted
        raise InputError(_TOO_LONG.format(f"more than {MAX_COMPLETION_TOKENS:,}"))
    b = _Builder(style)
    tools = _tools(chat.get("tools"))
    effort = _effort(chat, b)
    system: dict[str, Any] = {"type": "system_content", "reasoning_effort": effort}
    if date is not None:
        system["conversation_start_date"] = check_date(date)
    if style == "passthrough" and not tools:
        system["channel_config"] = {
            "valid_channels": ["analysis", "final"],
            "channel_required": True,
        }
    b.add(None, {"role": "system", "content": [system]})
    request = chat["messages"]
    if style == "harmony":
        _harmony_messages(request, tools, b)
    else:
        _passthrough_messages(request, tools, b)
    _analysis_warnings(b, keep_analysis)
    if request and request[-1].get("role") == "assistant":
        b.warn(
            "ends-with-assistant",
            len(request) - 1,
            "the chat ends with an assistant message; the prompt still ends with "
            "<|start|>assistant, so the model writes a new message instead of continuing it",
        )
    refuse_long_prompt(b.messages, vocab, keep_analysis)
    tokens = vocab.render_for_completion(b.messages, auto_drop_analysis=not keep_analysis)
    if len(tokens) > MAX_COMPLETION_TOKENS:
        raise InputError(_TOO_LONG.format(f"{len(tokens):,}"))
    return RenderedPrompt(
        tokens=tuple(tokens),
        text=vocab.decode(tokens),
        warnings=tuple(b.warnings),
        style=style,
        conversation=tuple(b.messages),
    )


def check_date(date: str) -> str:
    """`date` when it is a real date written YYYY-MM-DD (what the system message's `Current
    date:` line holds); else InputError, the value cut to a few dozen characters."""
    import datetime

    if _DATE.fullmatch(date):
        try:
            datetime.date.fromisoformat(date)
        except ValueError:
            pass
        else:
            return date
    shown = repr(date if len(date) <= 40 else date[:39] + "…")
    raise InputError(f"date {shown} is not a real date written YYYY-MM-DD (such as 2025-08-26)")


# What every rendered message costs at least: <|start|>, its role, <|message|> and <|end|>.
_MESSAGE_TOKENS = 4
_TOO_LONG = (
    f"the chat renders to {{}} tokens: more than a gpt-oss context holds "
    f"({MAX_COMPLETION_TOKENS:,}), so no one prompt: cut the chat to the turns you want rendered"
)


def refuse_long_prompt(
    messages: list[dict[str, Any]], vocab: Vocab, keep_analysis: bool = False
) -> None:
    """Refuse, before openai-harmony renders it, a conversation whose prompt would be longer
    than a gpt-oss context (what explain, decode and recover refuse to read): rendering and
    showing a chat costs hundreds of bytes a token (2 million tokens took 1.65 GB).

    First from what needs no encoding (a message's frame, a token's longest bytes), then by
    counting the tokens of the texts; both count only what is rendered whatever happens
    (analysis may be dropped), so neither refuses a chat that fits. The rendered tokens are
    checked again after (the system message and the tools' schemas add some).
    """
    rendered = [m for m in messages if keep_analysis or m.get("channel") != "analysis"]
    texts = [text for m in rendered for text in _rendered_texts(m)]
    least = _MESSAGE_TOKENS * len(rendered)
    if least + sum(len(t) for t in texts) // LONGEST_TOKEN_BYTES > MAX_COMPLETION_TOKENS:
        raise InputError(_TOO_LONG.format(f"more than {MAX_COMPLETION_TOKENS:,}"))
    if least + sum(len(t.encode("utf-8", "surrogatepass")) for t in texts) <= MAX_COMPLETION_TOKENS:
        return  # a token stands for a byte at least: the texts cannot pass the limit
    for text in texts:
        least += vocab.count_ordinary(text, MAX_COMPLETION_TOKENS - least)
        if least > MAX_COMPLETION_TOKENS:
            raise InputError(_TOO_LONG.format(f"more than {MAX_COMPLETION_TOKENS:,}"))


def _rendered_texts(message: Mapping[str, Any]) -> list[str]:
    """The texts a message renders verbatim: its content, a developer message's instructions
    and its tools' descriptions."""
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    texts = []
    for part in content if isinstance(content, list) else []:
        if isinstance(part.get("instructions"), str):
            texts.append(part["instructions"])
        functions = part.get("tools", {}).get("functions", {}).get("tools", [])
        texts.extend(tool["description"] for tool in functions)
    return texts


def _effort(chat: Mapping[str, Any], b: _Builder) -> str:
    raw = chat.get("reasoning_effort")
    if raw is None and isinstance(chat.get("reasoning"), dict):
        raw = chat["reasoning"].get("effort")
    if raw is None:
        return "Medium"
    if isinstance(raw, str) and raw.lower() in _EFFORTS:
        return _EFFORTS[raw.lower()]
    b.warn(
        "reasoning-effort",
        None,
        f"reasoning_effort {raw!r} is not low, medium or high; rendered as medium",
    )
    return "Medium"


def _tools(raw: Any) -> list[dict[str, Any]]:
    """Function tools, from `{"type": "function", "function": {...}}` or flat `{name, ...}`."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise InputError("`tools` must be a list")
    out = []
    for index, tool in enumerate(raw):
        spec = tool.get("function", tool) if isinstance(tool, dict) else None
        if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
            raise InputError(f"tools[{index}] has no function name")
        out.append(
            {
                "name": spec["name"],
                "description": str(spec.get("description") or ""),
                "parameters": spec.get("parameters"),
            }
        )
    return out


def _text(message: Mapping[str, Any], index: int, b: _Builder) -> str:
    """The text of a message's content: a string or a list of parts (text parts kept)."""
    content = message.get("content")
    if content is None:
        return ""
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                texts.append(part["text"])
            else:
                kind = part.get("type") if isinstance(part, dict) else type(part).__name__
                b.warn(
                    "part-dropped", index, f"a {kind!r} content part has no text and is left out"
                )
        text = "".join(texts)
    else:
        raise InputError(f"messages[{index}].content must be a string or a list of parts")
    found = sorted(set(_MARKUP.findall(text)))
    if found:
        b.warn(
            "markup-in-content",
            index,
            f"content holds raw Harmony markup ({', '.join(found)}); openai-harmony renders it as "
            "ordinary text tokens, which the model may read as format and copy",
        )
    return text


def _reasoning(message: Mapping[str, Any]) -> str | None:
    for key in ("reasoning_content", "reasoning", "thinking"):
        value = message.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _harmony_messages(
    request: list[dict[str, Any]], tools: list[dict[str, Any]], b: _Builder
) -> None:
    instructions: list[str] = []
    seen_other = False
    for index, m in enumerate(request):
        if m["role"] in ("system", "developer"):
            if seen_other:
                b.warn(
                    "instructions-moved",
                    index,
                    f"a {m['role']} message after the conversation started is moved into the "
                    "developer instructions at the top",
                )
            instructions.append(_text(m, index, b))
        else:
            seen_other = True
    developer: dict[str, Any] = {"type": "developer_content"}
    if instructions:
        developer["instructions"] = "\n\n".join(instructions)
    if tools:
        developer["tools"] = {
            "functions": {"name": "functions", "description": None, "tools": tools}
        }
    if instructions or tools:
        b.add(None, {"role": "developer", "content": [developer]})
    for index, m in enumerate(request):
        role = m["role"]
        if role == "user":
            b.add(index, {"role": "user", "content": _text(m, index, b)})
        elif role == "assistant":
            _assistant(m, index, b)
        elif role == "tool":
            _tool_result(m, index, b)


def _assistant(m: Mapping[str, Any], index: int, b: _Builder) -> None:
    reasoning = _reasoning(m)
    if reasoning is not None:
        b.add(index, {"role": "assistant", "channel": "analysis", "content": reasoning})
    text = _text(m, index, b)
    calls = m.get("tool_calls") or []
    if text or not calls:
        b.add(
            index,
            {"role": "assistant", "channel": "commentary" if calls else "final", "content": text},
        )
    if not text and not calls:
        b.warn("empty-assistant", index, "an assistant message with no content and no tool calls")
    for call in calls:
        function = call.get("function", {}) if isinstance(call, dict) else {}
        name = function.get("name")
        if not isinstance(name, str):
            raise InputError(f"messages[{index}] has a tool call without a function name")
        if isinstance(call.get("id"), str):
            b.calls[call["id"]] = name
        arguments = function.get("arguments")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments)
        b.add(
            index,
            {
                "role": "assistant",
                "channel": "commentary",
                "recipient": f"functions.{name}",
                "content_type": "<|constrain|>json",
                "content": arguments,
            },
        )


def _tool_result(m: Mapping[str, Any], index: int, b: _Builder) -> None:
    call_id = m.get("tool_call_id")
    name = b.calls.get(call_id) if isinstance(call_id, str) else None
    if name is None and isinstance(m.get("name"), str):
        name = m["name"]
        b.warn(
            "tool-result-author",
            index,
            f"tool result matched to {name!r} by its name only: no earlier tool call has id "
            f"{call_id!r}",
        )
    if name is None:
        name = "unknown"
        b.warn(
            "tool-result-author",
            index,
            "tool result with no matching tool call and no name: rendered from functions.unknown; "
            "the model cannot tell which call it answers",
        )
    b.add(
        index,
        {
            "role": "tool",
            "name": f"functions.{name}",
            "recipient": "assistant",
            "channel": "commentary",
            "content": _text(m, index, b),
        },
    )


def _passthrough_messages(
    request: list[dict[str, Any]], tools: list[dict[str, Any]], b: _Builder
) -> None:
    if tools:
        developer = {
            "type": "developer_content",
            "tools": {"functions": {"name": "functions", "description": None, "tools": tools}},
        }
        b.add(None, {"role": "developer", "content": [developer]})
    for index, m in enumerate(request):
        role = m["role"]
        text = _text(m, index, b)
        if role == "system":
            b.warn(
                "second-system-message",
                index,
                "the request's system message is rendered as a second system message after "
                "openai-harmony's own, not as developer instructions",
            )
        elif role == "assistant":
            if _reasoning(m) is not None:
                b.warn(
                    "analysis-dropped",
                    index,
                    "reasoning of this assistant turn is not rendered at all",
                )
            if m.get("tool_calls"):
                b.warn(
                    "tool-call-dropped", index, "tool calls of this assistant turn are not rendered"
                )
            b.warn(
                "assistant-without-channel",
                index,
                "assistant turn rendered without a channel (<|start|>assistant<|message|>): the "
                "model sees an earlier answer outside the format and may write its next one "
                "the same way",
            )
        elif role == "tool":
            name = m.get("name") if isinstance(m.get("name"), str) else "unknown"
            b.warn(
                "tool-result-author",
                index,
                f"tool result rendered from functions.{name} with no recipient and no channel "
                "(openai-harmony refuses a tool message without an author name)",
            )
            b.add(index, {"role": role, "name": f"functions.{name}", "content": text})
            continue
        b.add(index, {"role": role, "content": text})


def _analysis_warnings(b: _Builder, keep_analysis: bool) -> None:
    """openai-harmony drops analysis messages before the last final one unless told not to."""
    finals = [i for i, m in enumerate(b.messages) if m.get("channel") == "final"]
    if not finals:
        return
    for i, m in enumerate(b.messages[: finals[-1]]):
        if m.get("channel") != "analysis":
            continue
        if keep_analysis:
            b.warn(
                "analysis-kept",
                b.origins[i],
                "reasoning of an earlier turn is kept in the prompt (--keep-analysis); gpt-oss "
                "expects earlier turns without their analysis",
            )
        else:
            b.warn(
                "analysis-dropped",
                b.origins[i],
                "reasoning of an earlier turn is dropped from the prompt (openai-harmony "
                "auto_drop_analysis); the model no longer sees it",
            )
