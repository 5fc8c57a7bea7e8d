"""Finding an error message in a line and reading it whole: its quoting, its header remainder."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache, partial
from typing import TYPE_CHECKING, Final

from harmony_doctor import specials
from harmony_doctor.faults.catalogue import (
    FORM,
    HEADER_FIELDS,
    KEYWORDS,
    LEAK_FIELDS,
    MESSAGE_FORMS,
    FormName,
)
from harmony_doctor.harmony.vocab import START, harmony_special_tokens
from harmony_doctor.inputs.text_lines import stripped_end
from harmony_doctor.lazy_regex import Pattern
from harmony_doctor.logs.lines import MAX_MESSAGE_CHARS, clip
from harmony_doctor.logs.remainder import parse_remainder, strip_unbalanced, unescape
from harmony_doctor.logs.words import Remainder as Remainder
from harmony_doctor.logs.words import text_ends
from harmony_doctor.native import native_for, new_hits

if TYPE_CHECKING:
    from harmony_doctor.native import FormFound, Hits

OPENER_REACH: Final = 4096  # characters before a message its opening quote may sit
# What stands before an exception's message as raised: its class, or pytest's `E` lines, which
# show the exception as raised (the short summary's `FAILED test - ...` quotes it again).
_RAISED: Final = re.compile(r"(?:E\s+)?[\w.]*(?:Error|Exception)\s*:?")


# The message forms (faults/catalogue.py), compiled in the order they are tried.
_FORMS: tuple[tuple[FormName, Pattern[str]], ...] = tuple(
    (form.name, Pattern(form.pattern, re.I)) for form in MESSAGE_FORMS if form.pattern
)
_CANONICAL: dict[FormName, str] = {f.name: f.canonical for f in MESSAGE_FORMS if f.canonical}
# All forms in one regex, to reject text in one call.
ANY_FORM = Pattern("|".join(f"(?:{p.pattern})" for _, p in _FORMS), re.I)

SPECIAL_TEXT = Pattern(specials.written((*specials.NAMES, r"reserved_\d+")))
_LEAK = Pattern(
    rf"""(?P<q0>["']?)(?P<field>{"|".join((*LEAK_FIELDS, *HEADER_FIELDS))})(?P=q0)"""
    r"""\s*:\s*(?P<q>["'])(?P<value>(?:\\.|(?!(?P=q)).)*)"""
)

# The quote a string a message may sit in opens with: straight quotes, and inline code's
# backtick (`` `...remaining in message header` (a handful of failed requests) ``: the words
# after the code's end are the writer's, never header words).
_OPENER = Pattern(r"""(?:(?<=[(\[{:=,\s])|^)(\\*)(['"`])""")


@dataclass(frozen=True)
class MessageHit:
    """An error message found in a text, read to its end."""

    name: FormName
    start: int
    message: str  # from the message start to its end, wrapper quoting undone
    closed: bool  # the message's end was seen (closing quote, bracket, parenthesis)
    end: int  # where the message (and its closing quote) ends in the text
    shape: str  # exception, bare, wrapper, json, repr, quoted
    quote: str | None  # the quote the message sits in, when it does
    remainder: Remainder | None
    token: int | None
    role_word: str | None
    context: str | None
    message_cut: int = 0  # characters left out of `message`'s middle (LogError.message_cut)
    opened_at: int | None = None  # where the string the message sits in opens, when it does


# Every form holds one of these words whole, so a line without them holds no message.
_FRAGMENTS = KEYWORDS

# A header remainder quoted on its own (pasted into an issue or a chat without the error text
# before it): Rust Debug `Some("...")` or `["...", ...]`, only where it holds Harmony markup.
_BARE_REMAINDER = Pattern(r"""(?<![\w:=])(?:Some\(\s*|\[\s*)(?=\\*")""")
_HEADER_MARKUP = Pattern(specials.HEADER)
_STOP_MARKUP = Pattern(specials.STOP)


# Per form, the words one of which each of its matches holds (a form without them: any word).
_FORM_WORDS: tuple[tuple[FormName, Pattern[str], frozenset[str]], ...] = tuple(
    (name, form, frozenset(FORM[name].keywords or _FRAGMENTS)) for name, form in _FORMS
)
_FORMS_WITH: dict[tuple[str, ...], tuple[tuple[FormName, Pattern[str]], ...]] = {}


def _forms_for(text: str, gate: bool = True) -> tuple[tuple[FormName, Pattern[str]], ...]:
    """The forms that can match in `text`, in the order they are tried.

    Each match of a form holds one of its keywords (faults/catalogue.py), so on ASCII text a
    form whose words the text lacks cannot match. Text that is not ASCII gets every form:
    case-insensitive matching folds the long s (U+017F) to `s`, which `lower()` does not.
    `gate`: no form at all where the text holds none of the words (what find_hit has always
    done, on any text)."""
    lower = text.lower()
    for word in _FRAGMENTS:
        if word in lower:
            break
    else:
        return () if gate or text.isascii() else _FORMS
    if not text.isascii():
        return _FORMS
    present = tuple(word for word in _FRAGMENTS if word in lower)
    forms = _FORMS_WITH.get(present)
    if forms is None:
        forms = tuple(
            (name, form) for name, form, words in _FORM_WORDS if not words.isdisjoint(present)
        )
        if len(_FORMS_WITH) < 4096:  # the sets of words lines hold: a few in any real log
            _FORMS_WITH[present] = forms
    return forms


def holds_form(text: str) -> bool:
    """Whether a message form matches anywhere in `text`: `ANY_FORM.search(text)`, sparing the
    regexes of forms the text holds no word of."""
    return any(form.search(text) for _, form in _forms_for(text, gate=False))


def holds_message(text: str, position: int = 0, bare: bool = True) -> bool:
    """Whether an error message starts somewhere in `text` from `position` on.

    `bare`: count a header remainder quoted on its own (not when `text` may be the rest of a
    message already being read).
    """
    if any(form.search(text, position) for _, form in _forms_for(text)):
        return True
    return bare and _find_bare(text, position) is not None


def find_hit(text: str, position: int = 0) -> MessageHit | None:
    """The first error message in `text` from `position` on, or None."""
    forms = _forms_for(text)
    if not forms and "<|" not in text:
        return None  # no form can match, nor a bare remainder (it holds markup)
    best: tuple[int, FormName, re.Match[str]] | None = None
    for name, form in forms:
        match = form.search(text, position)
        if match is not None and (best is None or match.start() < best[0]):
            best = (match.start(), name, match)
    return _hit(text, position, best)


def hit_finder(native: bool | None = None) -> Callable[[str, int], MessageHit | None]:
    """`find_hit`, decided once: the Rust search where it is built and allowed
    (`native_for(native)`), which settles the form (`_find_settled`); else Python's."""
    hits = native_hits() if native_for(native) else None
    return find_hit if hits is None else partial(_find_settled, hits)


def _find_settled(hits: Hits, text: str, position: int = 0) -> MessageHit | None:
    """`find_hit` with the form found and settled in Rust (no form's regex runs again here):
    Python reads the message out of its quoting, or a bare remainder where markup is."""
    found = hits.find(text, position)
    return find_hit(text, position) if found is None else read_found(text, position, found)


def read_found(text: str, position: int, found: FormFound) -> MessageHit | None:
    """The hit Rust found and settled (`Hits.find`'s answer, not None) in `text`, read."""
    if found.form is None:
        return _find_bare(text, position) if "<|" in text else None
    bare = _find_bare(text, position, found.start)
    name = _FORMS[found.form][0]
    return bare or _read_hit(text, name, found.start, found.end, found.groups)


@cache
def native_hits() -> Hits | None:
    """The Rust search made of the forms' patterns, or None: not built, or a pattern it cannot
    translate even loosely (then Python searches every text)."""
    patterns = form_patterns()
    if not native_for(True) or patterns is None:
        return None
    try:
        return new_hits(patterns=patterns, ranks=[_RANK[name] for name, _ in _FORMS])
    except ValueError:
        return None


def form_patterns() -> list[str] | None:
    """The catalogue's forms' patterns in the order they are tried (each compiled with `re.I`),
    as the Rust searches take them; None where one has other flags."""
    if any(form.flags != re.I for _, form in _FORMS):
        return None
    return [form.pattern for _, form in _FORMS]


def native_hit_counts() -> tuple[int, int] | None:
    """(texts the Rust search read, texts it handed to Python) in this process, or None when
    it is not made."""
    hits = native_hits() if native_hits.cache_info().currsize else None
    return None if hits is None else hits.counts()


def find_hit_reference(text: str, position: int = 0) -> MessageHit | None:
    """`find_hit` trying every form behind one gate, as first written: the reference it is
    tested equal to."""
    best: tuple[int, FormName, re.Match[str]] | None = None
    lower = text.lower()
    if any(fragment in lower for fragment in _FRAGMENTS) and ANY_FORM.search(text, position):
        for name, form in _FORMS:
            match = form.search(text, position)
            if match is not None and (best is None or match.start() < best[0]):
                best = (match.start(), name, match)
    return _hit(text, position, best)


def _hit(
    text: str, position: int, best: tuple[int, FormName, re.Match[str]] | None
) -> MessageHit | None:
    """The hit of the first form found (`best`), unless a bare remainder starts before it.

    A form of a higher rank (faults/form.py: generic, then the fallback) is the hit only where
    no form of a lower rank matches the text: the form that knows the writer refines the
    statement a generic one makes, and any statement refines the fallback's."""
    while best is not None and _RANK[best[1]] and (lower := _below(text, position, best)):
        best = lower
    bare = _find_bare(text, position, best[0] if best is not None else len(text))
    if bare is not None:
        return bare
    if best is None:
        return None
    return _read_hit(text, best[1], best[2].start(), best[2].end(), best[2].groupdict())


_GENERIC: frozenset[FormName] = frozenset(f.name for f in MESSAGE_FORMS if f.generic)
_FALLBACK: frozenset[FormName] = frozenset(f.name for f in MESSAGE_FORMS if f.fallback)
_RANK: dict[FormName, int] = {f.name: f.rank for f in MESSAGE_FORMS}


def is_generic(name: FormName) -> bool:
    """Whether a form is a statement in the grammar's terms (faults/generic.py)."""
    return name in _GENERIC


def is_fallback(name: FormName) -> bool:
    """Whether a form is the last resort: openai-harmony's exception in words no form knows."""
    return name in _FALLBACK


def _below(
    text: str, position: int, found: tuple[int, FormName, re.Match[str]]
) -> tuple[int, FormName, re.Match[str]] | None:
    """The earliest match of a form of a lower rank than `found`'s, or None."""
    rank = _RANK[found[1]]
    best: tuple[int, FormName, re.Match[str]] | None = None
    for name, form in _forms_for(text, gate=False):
        if _RANK[name] >= rank:
            continue
        match = form.search(text, position)
        if match is not None and (best is None or match.start() < best[0]):
            best = (match.start(), name, match)
    return best


def _token_id(value: str) -> int | None:
    """The id of a token an error names: `<|end|>` or its id."""
    if value.isdigit():
        return int(value) if len(value) <= 6 else None
    return harmony_special_tokens().get(value)


def _find_bare(text: str, position: int, before: int | None = None) -> MessageHit | None:
    """A header remainder quoted on its own, starting before `before`, that carries markup."""
    if "<|" not in text:
        return None
    for match in _BARE_REMAINDER.finditer(text, position, len(text) if before is None else before):
        start = match.start()
        if text[:start].rstrip().endswith((":", "=")):
            continue  # a field's value (`"stop": ["<|call|>"]`), not a pasted remainder
        body = text[start:]
        escaped = '\\"' in body[: match.end() - start + 2]
        if escaped:
            body = unescape(body)  # quoted once more on its way into this line
        remainder, used = parse_remainder(": " + body)
        joined = " ".join(remainder.words)
        if not remainder.words or not _HEADER_MARKUP.search(joined):
            continue
        if remainder.form == "list" and all(
            _STOP_MARKUP.fullmatch(w) or _HEADER_MARKUP.fullmatch(w) for w in remainder.words
        ):
            continue  # a list of special tokens (a stop list, a tokenizer dump), not a header
        literal = body[: max(used - 2, 0)]
        return MessageHit(
            name="bare_remainder",
            start=start,
            message=_CANONICAL["leftover"] + ": " + literal,
            closed=remainder.closed,
            end=start + used - 2 if remainder.closed and not escaped else len(text),
            shape="bare",
            quote=None,
            remainder=remainder,
            token=None,
            role_word=None,
            context=None,
        )
    return None


def _read_hit(
    text: str, name: FormName, start: int, end: int, groups: Mapping[str, str | None]
) -> MessageHit:
    """Read the message a form's match (`start`, `end`, its named groups: Python's or Rust's)
    starts to its end: out of its quoting, to its kind's fields."""
    opener = _find_opener(text, start)
    offset = end - start
    as_logged = False  # `rest` is the line's own text after the match, not undone quoting
    if opener is not None:
        body, stop, closed, shape = _read_quoted(text, start, opener)
        matched, rest = body[:offset], body[offset:]
    else:
        matched, rest, as_logged, shape = _read_plain(text, start, end)
        stop, closed = len(text), True
    remainder: Remainder | None = None
    token: int | None = None
    role_word: str | None = None
    context: str | None = None
    message_cut = 0
    if name in ("leftover", "leftover_old"):
        remainder, used = parse_remainder(rest)
        held, message_cut = text_ends(rest, used)
        message = _CANONICAL[name] + held
        if opener is None:  # a plain line ends with its list or Some(...), if the log kept it
            closed = remainder.closed
            if closed and as_logged:
                stop = start + offset + used
    elif name == "unexpected_token":
        value = groups["token"] or ""
        token = int(value) if value.isdigit() else None
        expected = groups["expected"] or str(START)
        message = f"Unexpected token {value} while expecting start token {expected}"
    elif name == "unknown_role":
        words = rest.split()
        role_word = words[0] if words else ""
        if opener is None:
            role_word = strip_unbalanced(role_word)
            if as_logged and words:  # the message ends with its word: more may follow on the
                stop = start + offset + rest.index(words[0]) + len(words[0])  # line (a tally)
        message = f"Unknown role: {role_word}"
    elif name == "said_unexpected":
        token = _token_id(groups["found"] or groups["bare"] or groups["id"] or "")
        message, context = _read_tail(name, matched, rest, quoted=opener is not None)
    elif name == "said_role":
        role_word = groups["role"]
        message, context = _read_tail(name, matched, rest, quoted=opener is not None)
    elif name in ("empty_channel", "header_eos", "missing_role"):
        message = _CANONICAL[name]
    else:
        message, context = _read_tail(name, matched, rest, quoted=opener is not None)
        if name == "ollama_unmapped_tool":
            named = re.search(r"harmonyFunctionName=([\w.-]+)", text[start:])
            context = named.group(1) if named else None
    return MessageHit(
        name=name,
        start=start,
        message=message,
        closed=closed,
        end=max(stop, start + 1),
        shape=shape,
        quote=opener[2] if opener is not None else None,
        remainder=remainder,
        token=token,
        role_word=role_word,
        context=context,
        message_cut=message_cut,
        opened_at=opener[0] if opener is not None else None,
    )


def _read_quoted(text: str, start: int, opener: tuple[int, int, str]) -> tuple[str, int, bool, str]:
    """A message inside a string: (body unescaped, where it stops, closed, shape)."""
    opened_at, level, quote = opener
    end = _find_closing(text, start, quote, level)
    body = text[start : len(text) if end is None else end]
    stop = len(text) if end is None else end + 2**level
    for _ in range(level + 1):
        body = unescape(body)
    before = text[:opened_at].rstrip()
    if re.search(r"""["']?\w+["']?\s*:$""", before):
        shape = "json"
    elif re.search(r"\w\($", before):
        shape = "repr"
    else:
        shape = "quoted"
    return body, stop, end is not None, shape


def _read_plain(text: str, start: int, end: int) -> tuple[str, str, bool, str]:
    """A message in no string, from `start` to the line's end, its form matched to `end`:
    (the match, the rest, whether the rest is the line's own text, shape). The rest is copied
    once (a header remainder of mebibytes was copied twice, whole line and rest)."""
    stop = stripped_end(text, start, len(text))  # where `text[start:].rstrip()` ends
    if text.find('Some(\\"', start, stop) >= 0 or text.find('[\\"', start, stop) >= 0:
        body = unescape(text[start:stop])  # quoted once more on its way into this line
        matched, rest, as_logged = body[: end - start], body[end - start :], False
    else:
        matched, rest, as_logged = text[start : min(end, stop)], text[end:stop], True
    before = text[:start].strip()
    if not before:
        shape = "bare"
    elif _RAISED.fullmatch(before):
        shape = "exception"
    else:
        shape = "wrapper"
    return matched, rest, as_logged, shape


def _read_tail(name: FormName, matched: str, rest: str, quoted: bool) -> tuple[str, str | None]:
    """A free-text message to its end, and the model output or raw text it quotes, if any."""
    context: str | None = None
    tail = rest.rstrip()
    if not quoted:
        tail = strip_unbalanced(tail)
    if name in ("template_content", "template_thinking"):
        tail = re.split(r"\s+at row \d+, column \d+", tail)[0]
    if name == "lmstudio_tool":
        tail, _, output = tail.partition("Model Output:")
        context = output.strip() or None
    if name == "provider_tool_args":
        failed = re.search(r"""failed_generation\W*:\W*["'](?P<raw>(?:\\.|[^"'])*)""", tail)
        context = unescape(failed.group("raw")) if failed else None
        tail = re.split(r"""["']\s*,""", tail, maxsplit=1)[0]
    if name == "ollama_unmapped_tool":
        tail = ""  # the name follows the message as a field of its own (see _read_hit)
    if name == "llamacpp_peg":
        tail, _, output = tail.partition("output:")
        context = output.strip() or None
        tail = re.split(r"(?<=[.;])\s|[\"'],", tail, maxsplit=1)[0].rstrip(".;")
    if name == "ollama_tool":
        # A client's flattened report goes on after the message (`Status Code: 500 Traceback:`)
        tail = re.split(r"\s+(?:Status Code:|Traceback:|\(status code:)", tail)[0]
        raw = (
            re.search(r"raw='(?P<raw>.*)',\s*err=", tail)
            or re.search(r"raw=(\S+)", tail)
            or re.search(r"\bRaw:\s*(.*?)\s+Error:", tail)
        )
        context = raw.group(1) if raw else None
    return (_CANONICAL.get(name, matched) + tail).strip(), context


# A message a user, system, developer or tool wrote: markup in it was sent, not returned.
_WRITTEN = Pattern(r"""["']role["']\s*:\s*["'](?:user|system|developer|tool)["']""")


def find_leak(text: str) -> MessageHit | None:
    """The first JSON or repr string field in `text` whose value holds Harmony markup, in a
    line that is not a message of a request written by anyone but the assistant."""
    if _WRITTEN.search(text):
        return None
    for match in _LEAK.finditer(text):
        value = unescape(match["value"])
        header = match["field"] in HEADER_FIELDS
        markup = SPECIAL_TEXT.findall(value)
        if not markup or (header and all(m == "<|constrain|>" for m in markup)):
            continue  # a recipient `<|constrain|>json` is HD202's, found in the stream
        return MessageHit(
            name="header_markup" if header else "markup_leak",
            start=match.start(),
            message=clip(value, MAX_MESSAGE_CHARS),
            closed=True,
            end=match.end(),
            shape="json",
            quote=match["q"],
            remainder=None,
            token=None,
            role_word=None,
            context=match["field"],
        )
    return None


def string_around(text: str, position: int) -> int | None:
    """Where the innermost string still open at `position` opens (inline code's included)."""
    opener = _find_opener(text, position)
    return None if opener is None else opener[0]


def _find_opener(text: str, start: int) -> tuple[int, int, str] | None:
    """The innermost string still open at `start`: (position, escape level, quote)."""
    candidates = list(_OPENER.finditer(text, max(0, start - OPENER_REACH), start))
    for candidate in reversed(candidates):
        level = (len(candidate.group(1)) + 1).bit_length() - 1
        quote = candidate.group(2)
        if _find_closing(text, candidate.end(), quote, level, start) is None:
            return candidate.start(), level, quote
    return None


def _find_closing(
    text: str, position: int, quote: str, level: int, end: int | None = None
) -> int | None:
    """Index of the backslashes before the quote that closes a string at `level`, or None."""
    modulus, wanted = 2 ** (level + 1), 2**level - 1
    stop = len(text) if end is None else end
    index = text.find(quote, position, stop)
    while index >= 0:
        run = 0
        while index - run - 1 >= position and text[index - run - 1] == "\\":
            run += 1
        if run % modulus == wanted:
            return index - run
        index = text.find(quote, index + 1, stop)
    return None
