"""Fault facts -> the most specific rule of the catalogue, for token streams and logs alike."""

from __future__ import annotations

from dataclasses import dataclass

from harmony_doctor.faults import rules
from harmony_doctor.faults.rules import Rule
from harmony_doctor.faults.wording import HEADER_SHAPE as HEADER_SHAPE
from harmony_doctor.harmony.vocab import CALL, CHANNEL, CONSTRAIN, MESSAGE, RETURN, STOP_TOKENS
from harmony_doctor.models import ErrorKind

# o200k ids of header words that begin a message when written as plain text: `assistant`,
# `system`, `developer`, `tool`, and `<` (a `<|start|>` spelled out in ordinary tokens).
HEADER_WORD_TOKENS = frozenset({173781, 17360, 77944, 17952, 27})


@dataclass(frozen=True)
class FaultContext:
    """What is known about a parser error, from tokens or from an error message alone."""

    kind: ErrorKind
    header_text: str | None = None  # decoded header, special tokens as text
    leftover: str | None = None  # the words harmony reported as remaining
    token: int | None = None  # the token harmony choked on (unexpected_token)
    previous: int | None = None  # the token before it, when known
    role_word: str | None = None
    prompt_end: bool = False  # the stream ends in `<|start|>assistant`, as a rendered prompt does


def classify(ctx: FaultContext) -> Rule:
    """The most specific rule that explains a fault."""
    header = ctx.header_text or ""
    words = f"{header} {ctx.leftover or ''}"
    match ctx.kind:
        case "header_leftover":
            # The words harmony reported decide, from tokens as from a log line, so that one
            # failure gets one code whichever of the two shows it; the header decides only
            # when the words are unknown (the replay disagreed with openai-harmony).
            if ctx.header_text is None or ctx.leftover is not None:
                return _classify_leftover(ctx.leftover or "")
            if sum(1 for w in words.split() if w.startswith("to=")) > 1 and "to=" in header:
                return rules.RULES["HD102"]
            if header.count("<|channel|>") > 1:
                return rules.RULES["HD103"]
            if "prompt_token" in words or _mostly_numbers(ctx.leftover or header):
                return rules.RULES["HD105"]
            if header and "<|channel|>" not in header.split("<|constrain|>")[0][:40]:
                return rules.RULES["HD101"]
            if "<|constrain|>" in header or " json " in f"{header} ":
                return rules.RULES["HD104"]
            if not header and ctx.leftover and len(ctx.leftover.split()) > 3:
                return rules.RULES["HD101"]
            return rules.RULES["HD106"]
        case "unexpected_token":
            if ctx.token == RETURN:
                return rules.RULES["HD111"]
            if ctx.previous == CALL or (ctx.previous is None and ctx.token == 12606):
                return rules.RULES["HD112"]
            if ctx.token in STOP_TOKENS:
                return rules.RULES["HD113"]
            if ctx.token in HEADER_WORD_TOKENS:
                return rules.RULES["HD115"]
            if ctx.token in (CONSTRAIN, CHANNEL, MESSAGE):
                return rules.RULES["HD116"]
            return rules.RULES["HD114"]
        case "unknown_role":
            # spec builds the header grammar at import: only the faults that need it load it.
            from harmony_doctor.harmony.spec import KNOWN_ROLES

            word = ctx.role_word or header
            if "<|start|>" in word or any(word.startswith(r + r) for r in KNOWN_ROLES):
                return rules.RULES["HD121"]
            return rules.RULES["HD122"]
        case "header_eos":
            if ctx.prompt_end:
                return rules.RULES["HD143"]
            if any(f"<|{name}|>" in header for name in ("end", "call", "return")):
                return rules.RULES["HD142"]
            return rules.RULES["HD141"]
        case _:
            return rules.default_rule(ctx.kind)


def _classify_leftover(leftover: str) -> Rule:
    """A header_leftover known only from the words harmony reported (a log, no tokens).

    harmony had already taken the header's last one or two words as content type and
    recipient, so a `to=` word left over means a second recipient.
    """
    words = leftover.split()
    if not words:
        return rules.RULES["HD106"]
    if "prompt_token" in leftover or _mostly_numbers(leftover):
        return rules.RULES["HD105"]
    if any(marker in leftover for marker in ("<|end|>", "<|start|>", "<|return|>", "<|call|>")):
        return rules.RULES["HD107"]
    if "<|channel|>" in leftover:
        return rules.RULES["HD103"]
    if any(w.startswith("to=") for w in words):
        return rules.RULES["HD102"]
    if "<|constrain|>" in leftover or any(w.lower() == "json" for w in words):
        return rules.RULES["HD104"]
    from harmony_doctor.harmony.spec import SPEC_CHANNELS

    if any(channel in w for w in words for channel in SPEC_CHANNELS) and len(words) <= 3:
        return rules.RULES["HD108"]
    if len(words) > 3 or (len(words) > 1 and all(_prose_word(w) for w in words)):
        return rules.RULES["HD101"]
    return rules.RULES["HD106"]


def _prose_word(word: str) -> bool:
    """A word of running text: letters with at most trailing punctuation (`the`, `Hello,`)."""
    return word.rstrip(".,;:!?'\"").isalpha()


def _mostly_numbers(text: str) -> bool:
    words = text.replace(",", " ").split()
    return len(words) >= 8 and sum(w.strip("[]=").isdigit() for w in words) > len(words) // 2
