"""Deterministic generators of Harmony completions and of token-level damage, for property tests.

Two functions, both driven only by the `random.Random` they are given (same seed, same output):

- `well_formed(rng) -> str`: the Harmony text of one well-formed completion, starting right after
  the prompt's `<|start|>assistant` (so with the rest of the first assistant header). Special
  tokens are written as their `<|name|>` text; tokenize with `Vocab.encode`, which takes every
  special-token string as its token. The text is well-formed by spec.py's grammar and parses
  with openai-harmony (role given, strict): analysis, commentary and final messages; tool calls
  with the recipient in the role part or after the channel; content types ` json`,
  `<|constrain|>json` and ` <|constrain|>json`; multi-byte text (accents, CJK, emoji) in bodies
  and, rarely, in recipient names. Bodies never hold the text `<|`. Every message but the last
  ends in `<|end|>`; the last ends in `<|return|>` (final answer) or `<|call|>` (tool call).
- `mutate(tokens, rng) -> list[int]`: one token-level mutation of a stream: drop, duplicate or
  swap a token (biased toward special tokens and headers, where it matters), insert a special
  or reserved token, replace a token by one, insert a lone non-UTF-8 byte token, or cut the
  stream. The result may still be
  well-formed (dropping a body token usually is); callers judge it, not this module.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

RETURN, CONSTRAIN, CHANNEL, START, END, MESSAGE, CALL = (
    200002,
    200003,
    200005,
    200006,
    200007,
    200008,
    200012,
)
ENDOFTEXT = 199999
FIRST_SPECIAL = 199998
NAMED = (ENDOFTEXT, RETURN, CONSTRAIN, CHANNEL, START, END, MESSAGE, CALL)
RESERVED_SAMPLE = (200000, 200001, 200004, 200009, 200011, 200013, 200018, 201087)
# Single-byte tokens of o200k that are not UTF-8 on their own: b"\xa9" (a continuation byte),
# b"\xc3" (a lead byte) and b"\xff" (never valid).
BYTE_TOKENS = (102, 127, 187)

FUNCTIONS = ("get_weather", "lookup", "search_docs", "create_ticket", "météo", "天气")
BUILTINS = ("browser.search", "browser.open", "python", "container.exec")
WORDS = (
    "The",
    "user",
    "asks",
    "about",
    "weather",
    "in",
    "Paris",
    "café",
    "naïve",
    "Zürich",
    "東京",
    "天气",
    "🚀",
    "—",
    "ok",
    "a < b",
    "x<y",
    "2+2=4",
    "need",
    "to",
    "call",
    "tool",
    "résumé",
    "Ελληνικά",
    "emoji 🎉🙂",
    "\n",
    "\t",
    "  ",
    "|",
    ">",
    "<",
    "0.5",
)


def _text(rng: random.Random, low: int = 0, high: int = 30) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(low, high))]
    text = " ".join(words)
    while "<|" in text:  # would tokenize as (or look like) a special token
        text = text.replace("<|", "< |")
    return text


def _json_args(rng: random.Random) -> str:
    city = rng.choice(("Paris", "Zürich", "東京", "São Paulo", "Kraków"))
    return f'{{"location": "{city}", "days": {rng.randint(1, 9)}}}'


def _content_type(rng: random.Random) -> str:
    return rng.choice(("", "", " json", "<|constrain|>json", " <|constrain|>json"))


def _header(rng: random.Random, channel: str, recipient: str | None, role_word: str) -> str:
    """`role_word` is "" for the first header (the prompt already holds the role)."""
    ct = _content_type(rng)
    if recipient is None:
        return f"{role_word}<|channel|>{channel}{ct}<|message|>"
    if rng.random() < 0.3:
        return f"{role_word} to={recipient}<|channel|>{channel}{ct}<|message|>"
    return f"{role_word}<|channel|>{channel} to={recipient}{ct}<|message|>"


def _recipient(rng: random.Random) -> str:
    if rng.random() < 0.25:
        return rng.choice(BUILTINS)
    return "functions." + rng.choice(FUNCTIONS)


def well_formed(rng: random.Random) -> str:
    """The Harmony text of one well-formed completion (see the module docstring)."""
    parts: list[str] = []
    count = rng.randint(1, 5)
    for index in range(count):
        role_word = "" if index == 0 else "assistant"
        last = index == count - 1
        if last:
            kind = rng.choice(("tool", "final", "final", "builtin"))
        elif rng.random() < 0.9:
            kind = rng.choice(("analysis", "analysis", "preamble"))
        else:  # spec-valid, if unusual: a call or an answer closed by <|end|> mid-completion
            kind = rng.choice(("tool", "builtin", "final"))
        if kind == "tool":
            header = _header(rng, "commentary", _recipient(rng), role_word)
            body, stop = _json_args(rng), "<|call|>"
        elif kind == "builtin":
            header = _header(rng, "analysis", rng.choice(BUILTINS), role_word)
            body, stop = _text(rng, 1, 6), "<|call|>"
        elif kind == "final":
            header = _header(rng, "final", None, role_word)
            body, stop = _text(rng), "<|return|>"
        else:
            channel = "analysis" if kind == "analysis" else "commentary"
            header = _header(rng, channel, None, role_word)
            body, stop = _text(rng), "<|end|>"
        if not last:
            stop = "<|end|><|start|>"
        parts.append(header + body + stop)
    return "".join(parts)


def _special(rng: random.Random) -> int:
    return rng.choice(NAMED) if rng.random() < 0.8 else rng.choice(RESERVED_SAMPLE)


def _position(tokens: Sequence[int], rng: random.Random) -> int:
    """An index, half the time one next to a special token (headers and terminators)."""
    specials = [i for i, t in enumerate(tokens) if t >= FIRST_SPECIAL]
    if specials and rng.random() < 0.5:
        at = rng.choice(specials) + rng.choice((-2, -1, 0, 0, 1, 2))
        return min(max(at, 0), len(tokens) - 1)
    return rng.randrange(len(tokens))


def mutate(tokens: Sequence[int], rng: random.Random) -> list[int]:
    """One token-level mutation of `tokens` (see the module docstring)."""
    out = list(tokens)
    if not out:
        return [_special(rng)]
    at = _position(out, rng)
    match rng.choice(("drop", "duplicate", "swap", "insert", "replace", "byte", "cut")):
        case "drop":
            del out[at]
        case "duplicate":
            out.insert(at, out[at])
        case "swap":
            other = min(at + 1, len(out) - 1)
            out[at], out[other] = out[other], out[at]
        case "insert":
            out.insert(at + rng.randint(0, 1), _special(rng))
        case "replace":
            out[at] = _special(rng)
        case "byte":
            out.insert(at + rng.randint(0, 1), rng.choice(BYTE_TOKENS))
        case _:
            out = out[:at]
    return out
