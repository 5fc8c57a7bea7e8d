"""Failure patterns: one template per cause, the key of `scan --by pattern`.

As a template miner (Drain) masks the variable tokens of log lines, a pattern keeps what
tells causes apart and masks what varies between failures of one cause:
- kept: the kind; the id and name of an unexpected special token (200002 `<|return|>` and
  200007 `<|end|>` are different problems); special tokens; the role, channel or `json` that
  follows `<|start|>`, `<|channel|>` or `<|constrain|>`; recipients as `to=<name>`; `json`,
  a channel or a role standing on its own, or a channel name with junk around it
  (`<w>commentary`); roles written twice (`assistantassistant`, `<|start|><|start|>assistant`);
  a list of numbers as `<nums>` (token ids where a header belongs).
- masked: the id of an unexpected ordinary (text) token as `<text>`: which word the model
  wrote where a start token belongs varies between failures of one cause, and a pattern per
  id made a day of vLLM logs 37 patterns, 33 of them singletons of that one cause; free text
  as one `<prose>`, whatever it holds (role and channel words, a number, quoted words); one
  other word beside structure as `<w>`; recipient names.
A remainder longer than 2 * REMAINDER_END characters is templated on its head and tail, with
`<elided>` between. Special tokens join the markup before them and the value written right
after them (a value after a space stays apart: `<|channel|> commentary` is an empty channel);
everything else is separated by one space, however the model spaced it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from harmony_doctor.harmony.spec import KNOWN_ROLES, SPEC_CHANNELS
from harmony_doctor.harmony.vocab import FIRST_SPECIAL, special_token_name

_SPECIAL_TEXT = re.compile(r"(<\|[a-z_0-9]+\|>)")
_ROLE_CHAIN = re.compile(f"(?:{'|'.join(KNOWN_ROLES)})+")
_KEYWORDS = frozenset({"json", *SPEC_CHANNELS, *KNOWN_ROLES})
# A channel name with junk around it (`--commentary` in dashes, `commentary?`), not a word
# that holds one.
_JUNK_CHANNEL = re.compile(rf"([^A-Za-z\s]*)({'|'.join(SPEC_CHANNELS)})([^A-Za-z\s]*)")
# A number, or the first of a list with its name (`prompt_token_id=[200006,`).
_NUMBER = re.compile(r"(?:\w+=)?[\[\(]?-?\d+(?:\.\d+)?[\]\),]*")


# What an unexpected ordinary token's id shows as in a pattern (its id stays in the event).
TEXT_TOKEN = "<text>"


class _Class(Enum):
    MARKUP = "markup"  # a special token, or the value written right after one
    STRUCTURE = "structure"  # a recipient, a list of numbers
    KEYWORD = "keyword"  # json, a channel, a role: structure alone, prose among words
    NUMBER = "number"
    WORD = "word"


@dataclass(frozen=True)
class _Piece:
    shape: str
    kind: _Class
    glued: bool  # written right after the piece before it, without a space


def token_name(token: int) -> str | None:
    """The name of a special token; None for ordinary text tokens (they need the vocabulary)."""
    return special_token_name(token) if token >= FIRST_SPECIAL else None


def _shape(text: str) -> tuple[str, _Class]:
    """What one piece of text is, and how it shows in a pattern."""
    if _SPECIAL_TEXT.fullmatch(text):
        return text, _Class.MARKUP
    if text.startswith("to="):
        return "to=<name>", _Class.STRUCTURE
    if text in _KEYWORDS or _ROLE_CHAIN.fullmatch(text):
        return text, _Class.KEYWORD
    junk = _JUNK_CHANNEL.fullmatch(text)
    if junk is not None:
        before, channel, after = junk.groups()
        return ("<w>" if before else "") + channel + ("<w>" if after else ""), _Class.KEYWORD
    if _NUMBER.fullmatch(text):
        return "<num>", _Class.NUMBER
    return "<w>", _Class.WORD


def _pieces(text: str) -> list[_Piece]:
    """The words of `text`, special tokens cut out of them; a value glued to a special token
    belongs to it (`<|channel|>x` is markup, `x<|channel|>` a word before markup)."""
    pieces: list[_Piece] = []
    for word in text.split():
        for index, part in enumerate(p for p in _SPECIAL_TEXT.split(word) if p):
            shape, kind = _shape(part)
            glued = index > 0
            if glued and kind is not _Class.MARKUP and _SPECIAL_TEXT.fullmatch(pieces[-1].shape):
                kind = _Class.MARKUP  # the value of the special token before it
                shape = "<w>" if shape == "<num>" else shape
            pieces.append(_Piece(shape, kind, glued))
    return _numbers(pieces)


def _numbers(pieces: list[_Piece]) -> list[_Piece]:
    """Two numbers or more in a row are a list (token ids): structure; one number is a word."""
    out: list[_Piece] = []
    index = 0
    while index < len(pieces):
        end = index
        while end < len(pieces) and pieces[end].kind is _Class.NUMBER:
            end += 1
        if end - index >= 2:
            out.append(_Piece("<nums>", _Class.STRUCTURE, pieces[index].glued))
            index = end
        elif end > index:
            out.append(_Piece("<num>", _Class.WORD, pieces[index].glued))
            index = end
        else:
            out.append(pieces[index])
            index += 1
    return out


def _template(pieces: list[_Piece]) -> list[str]:
    """Each run of words and keywords as one part: `<prose>` when it holds two words or more
    and any ordinary word, else its words; markup and structure as they are."""
    parts: list[str] = []
    run: list[_Piece] = []
    in_markup = False  # the last part is special tokens and their values

    def close_run() -> None:
        if len(run) > 1 and any(p.kind is _Class.WORD for p in run):
            parts.append("<prose>")
        else:
            parts.extend(p.shape for p in run)
        run.clear()

    for piece in pieces:
        if piece.kind in (_Class.WORD, _Class.KEYWORD):
            run.append(piece)
            in_markup = False
            continue
        close_run()
        markup = piece.kind is _Class.MARKUP
        special = markup and bool(_SPECIAL_TEXT.fullmatch(piece.shape))
        if in_markup and markup and (piece.glued or special):
            parts[-1] += piece.shape  # special tokens join each other and their values
        else:
            parts.append(piece.shape)
        in_markup = markup
    close_run()
    return parts


# A header remainder longer than twice this is templated on its head and tail only, with
# ELIDED between them: a pattern is a shape, and a megabyte of header is not read word by word.
REMAINDER_END = 2048
ELIDED = "<elided>"


def remainder_template(remainder: str) -> str:
    """`to=functions.a to=functions.a` -> `to=<name> to=<name>`; prose -> `<prose>`."""
    if len(remainder) > 2 * REMAINDER_END:
        head = remainder[:REMAINDER_END].rsplit(None, 1)[0]  # whole words only
        tail = remainder[-REMAINDER_END:].split(None, 1)[-1]
        return f"{remainder_template(head)} {ELIDED} {remainder_template(tail)}"
    parts = _template(_pieces(remainder))
    if parts in (["<w>"], ["<num>"]):
        return "<prose>"  # a word alone is free text too
    return " ".join(parts) or "<empty>"


def role_template(role: str) -> str:
    """An unknown role's shape: kept when it is made of roles and markup (`<|start|>assistant`,
    `assistantassistant`, `toolassistant`), else `<w>`."""
    parts = _template(_pieces(role))
    template = " ".join(parts)
    structural = "<|" in template or _ROLE_CHAIN.fullmatch(template)
    return template if structural and len(template) <= 60 else "<w>"


def pattern_of(
    kind: str, token: int | None = None, remainder: str | None = None, role: str | None = None
) -> str:
    """The pattern key of one failure."""
    if kind == "unexpected_token" and token is not None:
        name = token_name(token)
        return f"unexpected_token {token} {name}" if name else f"unexpected_token {TEXT_TOKEN}"
    if kind == "header_leftover":
        return f"header_leftover {remainder_template(remainder)}" if remainder else kind
    if kind == "unknown_role" and role is not None:
        return f"unknown_role {role_template(role)}"
    return kind
