"""Harmony markup by where it sits: a tokenizer's listing of its special tokens is no stream,
and a returned field that holds Harmony text with its special tokens stripped is a leak."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Final

from harmony_doctor import specials
from harmony_doctor.faults import rules
from harmony_doctor.inputs.paste import DEFINES
from harmony_doctor.lazy_regex import Pattern
from harmony_doctor.logs.describe import unparsed
from harmony_doctor.logs.stripped import find_stripped
from harmony_doctor.models import LogError

_SPECIAL: Final = Pattern(r"<\|[a-z_]+\|>")
# A special token listed with its id, either way round (`200012 '<|call|>'`, `"<|call|>": 200012`,
# `<|call|> = 200012`), or a loader's or a config's words about special tokens.
_LISTED: Final = Pattern(
    r"""\b\d{6}\b\s*[:=,]?\s*['"]?<\|[a-z_]+\|>|<\|[a-z_]+\|>['"]?\s*[:=,]\s*\d{6}\b"""
    r"|control token|special[ _-]tokens?|\bEOG\b|\b(?:eos|bos|pad|stop)[ _-]?token"
    r"|added_tokens|tokenizer\.|print_info:|llama_model_loader|load:\s",
    re.I,
)


_OPENING: Final = Pattern(r"\s*" + specials.ANY)


def opens_with_markup(text: str) -> bool:
    """Whether `text` opens with a Harmony special token (never `<|channel>`, another family's
    markup, nor `<|im_start|>`)."""
    return _OPENING.match(text) is not None


def lists_tokens(text: str) -> bool:
    """Whether the markup in `text` is a listing of special tokens (a model loader's log, a
    tokenizer config) or a glossary of them (`<|channel|> - means ...`), not Harmony output:
    most lines that hold markup list or define tokens."""
    marked = [line for line in text.split("\n") if _SPECIAL.search(line)]
    if not marked:
        return False
    listed = sum(1 for line in marked if _LISTED.search(line) or DEFINES.match(line))
    return listed * 2 > len(marked)


# The fields a server returns the model's words in, and those it returns reasoning in.
_RETURNED: Final = ("content", "text", "output_text")


def _returned(node: object) -> Iterator[tuple[str, object]]:
    """Every (field, value) of a returned message in a JSON document, depth first."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("messages", "input", "prompt"):
                continue  # what a client sent, not what came back
            yield key, value
            yield from _returned(value)
    elif isinstance(node, list):
        for item in node:
            yield from _returned(item)


def stripped_in_json(body: str) -> LogError | None:
    """Harmony text with its special tokens stripped in a returned field of a JSON document
    (`"content": "analysisThe user ...assistantfinalHi"` while reasoning_content is null)."""
    try:
        doc = json.loads(body)
    except (ValueError, RecursionError):
        return _stripped_in_fields(body)  # a document cut short: its fields as they stand
    for key, value in _returned(doc):
        if key in _RETURNED and isinstance(value, str) and value:
            found = find_stripped(value)
            if found is not None:
                line = _line_of(body, value)
                return found if line is None else _moved(found, line)
    return None


_FIELD: Final = Pattern(r'"(?:content|text|output_text)"\s*:\s*"((?:\\.|[^"\\])*)')


def _stripped_in_fields(body: str) -> LogError | None:
    if '"messages"' in body:
        return None  # a request, or a document that quotes one: not for a cut reading
    for match in _FIELD.finditer(body):
        found = find_stripped(match.group(1))
        if found is not None:
            return _moved(found, body.count("\n", 0, match.start()) + 1)
    return None


def _line_of(body: str, value: str) -> int | None:
    head = json.dumps(value)[1:40]
    index = body.find(head)
    return None if index < 0 else body.count("\n", 0, index) + 1


def _moved(error: LogError, line: int) -> LogError:
    from dataclasses import replace

    return replace(error, line=line, span=(line, line))


# A name a tool call or a recipient would carry, with the next header glued to it
# (`manage_cart<|channel|>commentary`, `functions.get_weather<|constrain|>json`), quoted or in
# inline code, or in a CJK text's brackets and after its punctuation: the parser left the
# markup inside the name, and it went back to the client.
_GLUED_NAME: Final = Pattern(
    r"""(?:^|[`'"\s(\uff08\u300c])(?P<name>(?:functions\.)?[A-Za-z_][\w.-]*)"""
    rf"(?P<markup>{specials.HEADER})"
    r"""(?P<rest>[A-Za-z0-9_.-]*)(?=[`'"\s),;\uff09\uff0c\u3001\u3002\u300d]|$)"""
)


def glued_name(text: str) -> LogError | None:
    """The first tool name or recipient holding Harmony markup that a text quotes (HD205)."""
    for number, line in enumerate(text.split("\n"), start=1):
        if "<|" not in line:
            continue
        match = _GLUED_NAME.search(line)
        if match is None or match["name"].lower() in _NOT_NAMES:
            continue
        if match["rest"] and match["rest"].lower() not in _HEADER_WORDS:
            continue  # words around a token a sentence names (`the<|constrain|>modifier`)
        shown = match.group(0).strip(" `'\"(")
        return unparsed(
            rules.RULES["HD205"],
            (number, number),
            shown,
            line,
            f"the name {match['name']!r} alone",
            f"{match['markup']} glued to the name {match['name']!r}: the next header was left "
            "inside a tool name or recipient and returned to the client",
        )
    return None


# Words of Harmony text itself, not names: `assistant<|channel|>`, `analysis<|message|>`.
_NOT_NAMES: Final = frozenset(
    {"assistant", "user", "system", "developer", "tool", "analysis", "commentary", "final", "json"}
)


# What may follow the markup glued to a name: the next header's own word (a channel, a content
# type, a role), or nothing. Any other word is a sentence's, around a token it names, its
# inline code's spaces lost when the page was copied as text.
_HEADER_WORDS: Final = frozenset({"analysis", "commentary", "final", "json", "code", "assistant"})


_PROMPT_OPEN: Final = Pattern(r"^\s*<\|start\|>(?:system|developer)<\|message\|>")
_PROMPT_END: Final = Pattern(r"<\|start\|>assistant\s*$")


def rendered_prompt(text: str) -> bool:
    """Harmony text shaped as a rendered prompt: a system or developer message first, and the
    `<|start|>assistant` the model's reply follows at the end."""
    return _PROMPT_OPEN.match(text) is not None and _PROMPT_END.search(text) is not None


_SENTENCE_END: Final = Pattern(r"[.!?:;)]\s*$")


def named_in_a_sentence(text: str) -> bool:
    """Markup a sentence names, its line broken where a page's inline code was (`<|constrain|>`
    then `jsonfor tool arguments. When the template ...`): it opens with no message's opening
    (<|start|>, <|channel|>), no <|message|> ever opens a body, and prose (a dozen words or
    more, ending as a sentence does) fills what would be a header, which holds a few words."""
    if "<|message|>" in text or text.lstrip().startswith(("<|start|>", "<|channel|>")):
        return False  # a body opened, or a message's own opening: output, however long
    words = _SPECIAL.sub(" ", text).split()
    return len(words) >= 12 and _SENTENCE_END.search(text) is not None


# A quoted span on one line: straight or curly double quotes, or inline code.
_QUOTED: Final = Pattern(r'"[^"\n]*"|`[^`\n]*`|\u201c[^\u201d\n]*\u201d')
_WORD: Final = Pattern(r"[A-Za-z]{2,}")


def quoted_in_prose(text: str) -> bool:
    """Markup a text's sentences quote, not output: every special token sits inside a quoted
    span (`the tag is "<|end|><|start|>assistant"`), and prose (half a dozen words or more)
    stands outside the quotes. Output opens with markup, or holds some outside any quote."""
    if text.lstrip().startswith("<|"):
        return False
    words = 0
    for line in text.split("\n"):
        bare = _QUOTED.sub(" ", line)
        if "<|" in bare:
            return False  # markup outside a quote: it may be output
        words += len(_WORD.findall(bare))
    return words >= 6
