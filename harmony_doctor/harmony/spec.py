"""The well-formed Harmony header, written once as a small grammar.

The grammar is stricter than openai-harmony's parser on purpose: it is the format the model is
meant to write (spec channels, one recipient, `json` content type), so the first byte it cannot
accept is where the model left the format. Headers are matched as text in which each byte is one
character (latin-1) and the special tokens that may appear in a header are single private-use
characters, so token boundaries, partial UTF-8 and typed-out `<|channel|>` text are all exact.

`Node.prefix()` builds a regex that matches every prefix of the node's language: a header is
still viable exactly when its text so far fully matches that regex.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from harmony_doctor.choices import Channel
from harmony_doctor.harmony.vocab import CHANNEL, CONSTRAIN, MESSAGE

SPEC_CHANNELS: tuple[Channel, ...] = ("analysis", "commentary", "final")
KNOWN_ROLES = ("user", "assistant", "system", "developer", "tool")
MAX_NAME = 200  # longer recipients or tool names are not something a model should write

# A special token inside header text: one private-use character each; any other special is
# OTHER_SPECIAL, which no rule accepts.
SYMBOL = {CHANNEL: "\ue005", CONSTRAIN: "\ue003", MESSAGE: "\ue008"}
OTHER_SPECIAL = "\ue0ff"


class Node:
    def full(self) -> str:
        raise NotImplementedError

    def prefix(self) -> str:
        raise NotImplementedError


@dataclass(frozen=True)
class Lit(Node):
    text: str

    def full(self) -> str:
        return re.escape(self.text)

    def prefix(self) -> str:
        out = ""
        for ch in reversed(self.text):
            out = f"(?:{re.escape(ch)}{out})?"
        return out


# A UTF-8 encoded character above ASCII, and a proper prefix of one, in latin-1 header text.
# openai-harmony refuses a header that does not decode ("could not decode header"), so a byte
# that cannot continue valid UTF-8 is where the header stops being viable.
_UTF8_MULTI = (
    r"(?:[\xc2-\xdf][\x80-\xbf]|\xe0[\xa0-\xbf][\x80-\xbf]|[\xe1-\xec\xee\xef][\x80-\xbf]{2}"
    r"|\xed[\x80-\x9f][\x80-\xbf]|\xf0[\x90-\xbf][\x80-\xbf]{2}|[\xf1-\xf3][\x80-\xbf]{3}"
    r"|\xf4[\x80-\x8f][\x80-\xbf]{2})"
)
_UTF8_PARTIAL = (
    r"(?:[\xc2-\xdf]|\xe0[\xa0-\xbf]?|[\xe1-\xec\xee\xef][\x80-\xbf]?|\xed[\x80-\x9f]?"
    r"|\xf0(?:[\x90-\xbf][\x80-\xbf]?)?|[\xf1-\xf3](?:[\x80-\xbf][\x80-\xbf]?)?"
    r"|\xf4(?:[\x80-\x8f][\x80-\xbf]?)?)"
)


@cache
def _ascii_outside(exclude: str) -> str:
    """A character class of the ASCII characters that the class body `exclude` does not hold."""
    excluded = re.compile(f"[{exclude}]")
    allowed = [chr(c) for c in range(128) if not excluded.fullmatch(chr(c))]
    return "[" + "".join(f"\\x{ord(c):02x}" for c in allowed) + "]"


@dataclass(frozen=True)
class Utf8Chars(Node):
    """`low` to `high` UTF-8 characters, none of them one of the ASCII characters `exclude`.

    `exclude` is the body of a regex character class (`\\t`-style escapes), valid alike in
    Python, Rust (llguidance) and GBNF, so streams/grammar.py can write the same class.
    """

    exclude: str
    low: int
    high: int

    def _unit(self) -> str:
        # Bytes are latin-1 characters here and special-token symbols are private-use
        # characters (below \uffff), so a single byte is an ASCII character outside `exclude`.
        # Written as the ASCII characters it allows: `[^...\x80-\uffff]` means the same here
        # but compiles about six times slower (every token explain compiles two of these).
        return f"(?:{_ascii_outside(self.exclude)}|{_UTF8_MULTI})"

    def full(self) -> str:
        return f"{self._unit()}{{{self.low},{self.high}}}"

    def prefix(self) -> str:
        unit = self._unit()
        return f"(?:{unit}{{0,{self.high}}}|{unit}{{0,{self.high - 1}}}{_UTF8_PARTIAL})"


@dataclass(frozen=True)
class Seq(Node):
    items: tuple[Node, ...]

    def full(self) -> str:
        return "".join(f"(?:{i.full()})" for i in self.items)

    def prefix(self) -> str:
        out = ""
        for item in reversed(self.items):
            out = f"(?:{item.prefix()}|(?:{item.full()}){out})" if out else item.prefix()
        return out


@dataclass(frozen=True)
class Alt(Node):
    items: tuple[Node, ...]

    def full(self) -> str:
        return "(?:" + "|".join(i.full() for i in self.items) + ")"

    def prefix(self) -> str:
        return "(?:" + "|".join(i.prefix() for i in self.items) + ")"


@dataclass(frozen=True)
class Opt(Node):
    item: Node

    def full(self) -> str:
        return f"(?:{self.item.full()})?"

    def prefix(self) -> str:
        return self.item.prefix()


def seq(*items: Node) -> Seq:
    return Seq(items)


def alt(*items: Node) -> Alt:
    return Alt(items)


# Name characters: any UTF-8 character but ASCII whitespace and `<` (so no special token either).
NAME = Utf8Chars(r" \t\n\r\x0b\x0c<", 1, MAX_NAME)
RECIPIENT = seq(Lit(" to="), NAME)
CHANNEL_PART = seq(Lit(SYMBOL[CHANNEL]), alt(*(Lit(c) for c in SPEC_CHANNELS)))
CONTENT_TYPE = alt(Lit(" json"), seq(Opt(Lit(" ")), Lit(SYMBOL[CONSTRAIN]), Lit("json")))
END_OF_HEADER = Lit(SYMBOL[MESSAGE])

# What follows the role word of an assistant header: a channel, at most one recipient (before
# or after the channel), an optional content type, then `<|message|>`.
ASSISTANT_REST = seq(
    alt(
        seq(RECIPIENT, CHANNEL_PART),
        seq(CHANNEL_PART, Opt(RECIPIENT)),
    ),
    Opt(CONTENT_TYPE),
    END_OF_HEADER,
)
# Headers of a whole conversation (prompt and completion): other roles take an optional channel;
# a tool's message is `NAME to=RECIPIENT`, optionally with a channel.
FULL_HEADER = alt(
    seq(Lit("assistant"), ASSISTANT_REST),
    seq(alt(*(Lit(r) for r in KNOWN_ROLES if r != "assistant")), Opt(CHANNEL_PART), END_OF_HEADER),
    seq(NAME, RECIPIENT, Opt(CHANNEL_PART), Opt(CONTENT_TYPE), END_OF_HEADER),
)


HEADERS: dict[str, Node] = {
    "rest": ASSISTANT_REST,  # the first header of a completion: the role is already given
    "assistant": seq(Lit("assistant"), ASSISTANT_REST),  # later headers of a completion
    "any": FULL_HEADER,  # any header of a whole conversation
}


@cache
def header_prefix_regex(which: str) -> re.Pattern[str]:
    """Matches every viable prefix of the header named in HEADERS."""
    return re.compile(HEADERS[which].prefix(), re.DOTALL)


def header_symbol_text(piece: bytes) -> str:
    """Header bytes as grammar text: one character per byte."""
    return piece.decode("latin-1")
