"""Guided-decoding grammars for a Harmony completion, written from spec.py's nodes, and llguidance.

The grammar is spec.py's header grammar plus find_origin's body and terminator rules, so the
default grammar accepts exactly the completions `replay.find_origin` finds no fault in:

    completion := header-rest body (<|end|> <|start|> "assistant" header-rest body)* ending
    ending     := <|return|> | <|call|> | (nothing: the engine's EOS, for servers whose EOS
                  token is <|return|>; an engine with its own EOS never takes that path)

where bodies hold no special token. `GrammarOptions` narrow it: allowed channels, declared tools
(recipients limited to them, tool calls to the commentary channel), content types, and which stop
token a final answer or a tool call must end with.

Two dialects: llguidance's Lark, with special tokens as token ids (`<[200005]>`) and bodies as a
token range, exact at the token level; and GBNF (llama.cpp, xgrammar), text-level, where special
tokens are their `<|name|>` text and bodies may not contain `<|`.

llguidance is imported lazily, only to check token streams against a Lark grammar offline.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from harmony_doctor.choices import CONTENT_TYPES, ContentType, Dialect
from harmony_doctor.errors import GrammarEngineError, InputError
from harmony_doctor.harmony import spec
from harmony_doctor.harmony.vocab import (
    CALL,
    CHANNEL,
    CONSTRAIN,
    END,
    FIRST_SPECIAL,
    RETURN,
    START,
    VOCAB_SIZE,
    Vocab,
    special_token_name,
)
from harmony_doctor.streams.grammar_compile import on_a_deep_stack, refuse_large_lark

TOOL_CHANNEL = "commentary"
# Recipients written without a dot are functions (`functions.NAME`), except these built-ins.
BARE_BUILTINS = ("python",)
# The end-of-sequence token of our offline engine: an extra id no Harmony stream holds, so every
# token of a stream goes through the grammar. Servers differ: vLLM and SGLang give llguidance the
# HF tokenizer's EOS, which for gpt-oss is <|return|> (llguidance then takes <|return|> as "end
# here", allowed only where the grammar may end). So the grammar may also end where <|return|>
# could come, and `llg_tokenizer(vocab, eos=RETURN)` checks it the way those servers run it.
ENGINE_EOS = VOCAB_SIZE

_SYMBOL_TOKEN = {symbol: token for token, symbol in spec.SYMBOL.items()}
_MESSAGE_END_ORDER = (END, RETURN, CALL)


@dataclass(frozen=True)
class GrammarOptions:
    """How to narrow spec.py's language; the defaults leave it exactly as spec.py has it."""

    channels: tuple[str, ...] = spec.SPEC_CHANNELS
    tools: tuple[str, ...] | None = None  # recipients as written after `to=`; None: any name
    content_types: tuple[ContentType, ...] = CONTENT_TYPES
    require_return: bool = False  # final answers end in <|return|>, and nothing else does
    require_call: bool = False  # messages with a recipient end in <|call|>, and nothing else does


@dataclass(frozen=True)
class MessageKind:
    """Headers (after the role) of messages that may end with the given stop tokens."""

    header: spec.Node
    stops: tuple[int, ...]


# --- the language ------------------------------------------------------------------------------


def channel_node(channels: Iterable[str]) -> spec.Node:
    wanted = set(channels)
    names = [c for c in spec.SPEC_CHANNELS if c in wanted]
    return spec.seq(spec.Lit(spec.SYMBOL[CHANNEL]), spec.alt(*(spec.Lit(c) for c in names)))


def recipient_node(tools: tuple[str, ...] | None) -> spec.Node:
    if tools is None:
        return spec.RECIPIENT
    return spec.seq(spec.Lit(" to="), spec.alt(*(spec.Lit(t) for t in tools)))


def content_type_node(kinds: tuple[ContentType, ...]) -> spec.Node:
    forms: dict[ContentType, spec.Node] = {
        "json": spec.Lit(" json"),
        "constrain": spec.seq(
            spec.Opt(spec.Lit(" ")), spec.Lit(spec.SYMBOL[CONSTRAIN]), spec.Lit("json")
        ),
    }
    return spec.alt(*(forms[k] for k in CONTENT_TYPES if k in kinds))


def _stops(options: GrammarOptions, channel: str, has_recipient: bool) -> tuple[int, ...]:
    stops = set(_MESSAGE_END_ORDER)
    if options.require_call:
        stops = {CALL} if has_recipient else stops - {CALL}
    if options.require_return:
        final_answer = channel == "final" and not has_recipient
        stops = stops & {RETURN} if final_answer else stops - {RETURN}
    return tuple(t for t in _MESSAGE_END_ORDER if t in stops)


def message_kinds(options: GrammarOptions) -> tuple[MessageKind, ...]:
    """The headers of the completion, grouped by the stop tokens their messages may end with."""
    if not options.channels:
        raise InputError("no channel allowed: give at least one --channel")
    recipient = recipient_node(options.tools)
    content = content_type_node(options.content_types) if options.content_types else None
    groups: dict[tuple[int, ...], tuple[list[str], list[str]]] = {}
    for channel in spec.SPEC_CHANNELS:
        if channel not in options.channels:
            continue
        groups.setdefault(_stops(options, channel, False), ([], []))[0].append(channel)
        calls_allowed = options.tools is None or (options.tools and channel == TOOL_CHANNEL)
        if calls_allowed:
            groups.setdefault(_stops(options, channel, True), ([], []))[1].append(channel)
    if all(stops == (END,) for stops in groups):
        raise InputError("with these options no message can end the completion")
    kinds: list[MessageKind] = []
    for stops, (plain, calls) in groups.items():
        if plain == calls:  # the shape spec.ASSISTANT_REST has
            both = channel_node(plain)
            where = spec.alt(spec.seq(recipient, both), spec.seq(both, spec.Opt(recipient)))
        else:
            forms: list[spec.Node] = []
            if calls:
                forms += [spec.seq(recipient, channel_node(calls))]
                forms += [spec.seq(channel_node(calls), recipient)]
            if plain:
                forms.append(channel_node(plain))
            where = spec.alt(*forms)
        tail = (spec.Opt(content),) if content is not None else ()
        kinds.append(MessageKind(spec.seq(where, *tail, spec.END_OF_HEADER), stops))
    return tuple(kinds)


# --- writing it out ----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Writer:
    """How one dialect writes literals, special tokens, name runs and rules."""

    dialect: Dialect

    def literal(self, text: str) -> str:
        """A string literal both dialects read: JSON's quoting, and every character that is not
        printable (C1 controls, bidi and invisible formatting) as its `\\u` escape, not raw."""
        quoted = json.dumps(text, ensure_ascii=False)
        if quoted.isprintable():
            return quoted
        return "".join(c if c.isprintable() else json.dumps(c)[1:-1] for c in quoted)

    def special(self, token: int) -> str:
        if self.dialect == "lark":
            return f"<[{token}]>"
        return self.literal(special_token_name(token))

    def ref(self, name: str) -> str:
        return name if self.dialect == "lark" else name.replace("_", "-")

    def rule(self, name: str, body: str) -> str:
        if self.dialect == "lark":
            return f"{name}: {body}"
        return f"{self.ref(name)} ::= {body}"

    def node(self, node: spec.Node, names: dict[spec.Node, str]) -> str:
        if node in names:
            return self.ref(names[node])
        match node:
            case spec.Lit(text=text):
                return self._lit(text)
            case spec.Utf8Chars(exclude=exclude, low=low, high=high):
                if self.dialect == "lark":
                    return f"/[^{exclude}]{{{low},{high}}}/"
                return f"[^{exclude}]{{{low},{high}}}"
            case spec.Seq(items=items):
                return " ".join(self._group(i, names) for i in items)
            case spec.Alt(items=items):
                if len(items) == 1:
                    return self.node(items[0], names)
                return " | ".join(self.node(i, names) for i in items)
            case spec.Opt(item=item):
                inner = self.node(item, names)
                atomic = item in names or (isinstance(item, spec.Lit) and inner == self._lit1(item))
                return f"{inner}?" if atomic else f"({inner})?"
        raise TypeError(f"no grammar form for {type(node).__name__}")  # pragma: no cover

    def _group(self, node: spec.Node, names: dict[spec.Node, str]) -> str:
        text = self.node(node, names)
        if isinstance(node, spec.Alt) and len(node.items) > 1 and node not in names:
            return f"({text})"
        return text

    def _lit1(self, item: spec.Lit) -> str | None:
        """A literal written as one grammar item, else None."""
        parts = self._lit_parts(item.text)
        return parts[0] if len(parts) == 1 else None

    def _lit(self, text: str) -> str:
        return " ".join(self._lit_parts(text))

    def _lit_parts(self, text: str) -> list[str]:
        parts: list[str] = []
        run = ""
        for ch in text:
            if ch in _SYMBOL_TOKEN:
                if run:
                    parts.append(self.literal(run))
                parts.append(self.special(_SYMBOL_TOKEN[ch]))
                run = ""
            else:
                run += ch
        if run:
            parts.append(self.literal(run))
        return parts


def _describe(options: GrammarOptions) -> list[str]:
    tools = "any" if options.tools is None else (", ".join(options.tools) or "none")
    content = ", ".join(options.content_types) or "none"
    return [
        f"channels: {', '.join(options.channels)}; recipients: {tools}; content types: {content}",
        f"final answers must end in <|return|>: {'yes' if options.require_return else 'no'}; "
        f"tool calls must end in <|call|>: {'yes' if options.require_call else 'no'}",
    ]


def emit(options: GrammarOptions, dialect: Dialect, version: str = "") -> str:
    """The grammar of a completion (what follows the prompt's `<|start|>assistant`)."""
    w = _Writer(dialect)
    comment = "//" if dialect == "lark" else "#"
    kinds = message_kinds(options)
    recipient = recipient_node(options.tools)
    shared: list[tuple[str, spec.Node]] = [("recipient", recipient)]
    if options.content_types:
        shared.append(("content_type", content_type_node(options.content_types)))
    headers = [(f"header_{n}" if len(kinds) > 1 else "header", k) for n, k in enumerate(kinds, 1)]

    lines = [
        f"{comment} Harmony completion grammar ({dialect}), harmony-doctor {version}".rstrip(),
        f"{comment} The whole completion, from after the prompt's <|start|>assistant.",
        *(f"{comment} {line}" for line in _describe(options)),
    ]
    if dialect == "gbnf":
        lines.append(
            f"{comment} Text level: special tokens as their text; bodies may not contain '<|'."
        )
    lines.append("")
    if dialect == "lark":  # marks llguidance's Lark for servers that also take GBNF
        lines.append("%llguidance {}")
    opening = [h for h, k in headers if END in k.stops]
    closing = [(h, [t for t in k.stops if t != END]) for h, k in headers]
    used = sorted({t for _, k in headers for t in k.stops}, key=_MESSAGE_END_ORDER.index)
    root = "start" if dialect == "lark" else "root"
    last = w.ref("message_last")
    if opening:
        separator = f"{w.special(START)} {w.literal('assistant')}"
        lines.append(w.rule(root, f"({w.ref('message_open')} {separator})* {last}"))
        lines.append(
            w.rule("message_open", " | ".join(f"{w.ref(h)} {_body(w, END)}" for h in opening))
        )
    else:
        lines.append(w.rule(root, last))
    ends = [f"{w.ref(h)} {_bodies(w, stops)}" for h, stops in closing if stops]
    lines.append(w.rule("message_last", " | ".join(ends)))
    names = {node: name for name, node in shared}  # written by name inside the headers
    written = [w.rule(h, w.node(kind.header, names)) for h, kind in headers]
    words = set(re.findall(r"[\w-]+", "\n".join(written)))
    lines += written
    lines += [w.rule(name, w.node(node, {})) for name, node in shared if w.ref(name) in words]
    if dialect == "lark":
        lines.append(f"body: <[0-{FIRST_SPECIAL - 1}]>*  {comment} any ordinary token")
    else:
        # A body never holds "<|"; the stop's own "<" joins the body's trailing "<"s, so that a
        # lexer-based engine (llguidance reading GBNF) never has to give back a "<".
        for token in used:
            tail = special_token_name(token).removeprefix("<")
            lines.append(w.rule(f"body_{_STOP_NAMES[token]}", f'body "<"+ {w.literal(tail)}'))
        lines.append(w.rule("body", '([^<] | "<"+ [^<|])*'))
    return "\n".join(lines) + "\n"


_STOP_NAMES = {END: "end", RETURN: "return", CALL: "call"}


def _body(w: _Writer, stop: int) -> str:
    """A body and the stop token that ends it."""
    if w.dialect == "lark":
        return f"body {w.special(stop)}"
    return w.ref(f"body_{_STOP_NAMES[stop]}")


def _bodies(w: _Writer, stops: Sequence[int]) -> str:
    """The last body and its stop tokens; where <|return|> may end it, so may the grammar.

    Engines whose end-of-sequence token is <|return|> (vLLM, SGLang: the HF tokenizer's EOS)
    or that end on any end-of-generation token (llama.cpp) never match <|return|> as a grammar
    token: they let it through where the grammar is complete.
    """
    if w.dialect == "lark":
        tokens = _alternatives([w.special(t) for t in stops])
        return f"body {tokens}?" if RETURN in stops else f"body {tokens}"
    forms = [_body(w, t) for t in stops] + ([w.ref("body")] if RETURN in stops else [])
    return _alternatives(forms)


def _alternatives(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else "(" + " | ".join(items) + ")"


# --- declared tools ----------------------------------------------------------------------------


# The most tools a grammar declares. llguidance's compiler stops at 65,535 symbols (about 60,000
# tools, --check shows its panic), and no API takes nearly as many (OpenAI's takes 128).
MAX_TOOLS = 10_000
_SHOWN_NAME = 60  # how much of a refused tool name an error shows


def recipient_for(tool: str) -> str:
    """The recipient a model writes for a tool: `get_weather` -> `functions.get_weather`."""
    name = tool.strip()
    if not name:
        raise InputError(f"tool name {_shown(tool)} is empty: a recipient needs a name")
    if "." in name or name in BARE_BUILTINS:
        return name
    return f"functions.{name}"


def check_recipient(name: str) -> str:
    """A recipient a header can hold and a grammar names as it is: 1-200 printable characters,
    no whitespace, no `<`, and no empty part between dots (`functions.`, `.`, `a..b`)."""
    problem = _recipient_problem(name)
    if problem:
        raise InputError(f"tool name {_shown(name)} cannot be a recipient: {problem}")
    return name


def _recipient_problem(name: str) -> str:
    if not name:
        return "it is empty"
    if len(name) > spec.MAX_NAME:
        return f"longer than {spec.MAX_NAME} characters"
    if "<" in name or any(c.isspace() for c in name):
        return "it holds whitespace or '<'"
    if not name.isprintable():
        return "it holds a control or invisible character"
    if "" in name.split("."):
        return "a part between dots is empty"
    return ""


def _shown(name: str) -> str:
    """A tool name for an error: quoted, and cut when long (the funnel escapes the rest)."""
    return repr(name if len(name) <= _SHOWN_NAME else name[: _SHOWN_NAME - 1] + "…")


def tools_from_request(text: str, label: str) -> tuple[str, ...]:
    """Recipients for the `tools` of a chat request (or a bare list of tools), JSON text."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{label}: not JSON ({exc.msg} at line {exc.lineno})") from None
    except RecursionError:
        raise InputError(f"{label}: JSON nested too deeply") from None
    except ValueError as exc:  # e.g. an integer with more digits than Python converts
        raise InputError(f"{label}: not usable JSON ({exc})") from None
    tools = data.get("tools") if isinstance(data, dict) else data
    if not isinstance(tools, list):
        raise InputError(f"{label}: no 'tools' list (a chat request or a list of tools)")
    names: list[str] = []
    for tool in tools:
        if not isinstance(tool, dict):
            raise InputError(f"{label}: a tool is not an object")
        function = tool.get("function")
        name = function.get("name") if isinstance(function, dict) else tool.get("name")
        if not isinstance(name, str):
            raise InputError(f"{label}: a tool has no function name")
        names.append(recipient_for(name))
    return tuple(names)


def narrow_tools(names: Iterable[str]) -> tuple[str, ...]:
    """Declared recipients, checked and without repeats, in the order given; at most
    MAX_TOOLS of them."""
    declared = tuple(dict.fromkeys(check_recipient(n) for n in names))
    if len(declared) > MAX_TOOLS:
        raise InputError(
            f"{len(declared):,} tools declared: a grammar takes at most {MAX_TOOLS:,} "
            "(llguidance cannot compile about 60,000); declare the tools the model may call"
        )
    return declared


# --- llguidance --------------------------------------------------------------------------------


@dataclass(frozen=True)
class GrammarRun:
    """What guided decoding with a grammar would have done to a token stream."""

    tokens: int  # length of the stream
    blocked_index: int | None  # first token the grammar forbids; None: every token allowed
    complete: bool  # the stream ends the completion: the grammar allows nothing after it
    allowed: tuple[int, ...]  # special tokens allowed at blocked_index; text ones if few
    allowed_count: int  # how many tokens it allowed there
    end_allowed: bool = False  # the completion could have ended there instead


_TOKENIZERS: dict[str, Any] = {}
_LOCK = threading.Lock()


def _llguidance() -> Any:
    try:
        import llguidance
    except ImportError:
        raise GrammarEngineError(
            "llguidance is not installed (pip install llguidance); it checks grammars offline"
        ) from None
    return llguidance


class _Encoding:
    """The interface llguidance.TokenizerWrapper reads: token bytes, specials, an encoder."""

    def __init__(self, vocab: Vocab, eos: int) -> None:
        self.tokens = [vocab.token_bytes(t) for t in range(VOCAB_SIZE)]
        if eos == ENGINE_EOS:
            self.tokens.append(b"<|hd_engine_eos|>")
        self.eos_token_id = eos
        self.bos_token_id = None
        self.special_token_ids = list(range(FIRST_SPECIAL, len(self.tokens)))
        self._encode: Callable[[str], list[int]] = vocab.tiktoken.encode_ordinary

    def __call__(self, text: str | bytes) -> list[int]:
        if isinstance(text, bytes):
            text = text.decode("utf-8", errors="replace")
        return self._encode(text)


def llg_tokenizer(vocab: Vocab, eos: int = ENGINE_EOS) -> Any:
    """llguidance's tokenizer for o200k_harmony, built from the vocabulary file (about 1 s)."""
    llguidance = _llguidance()
    key = f"{vocab.path}:{eos}"
    with _LOCK:
        if key not in _TOKENIZERS:
            encoding = _Encoding(vocab, eos)
            wrapper = llguidance.TokenizerWrapper(encoding)
            _TOKENIZERS[key] = llguidance.LLTokenizer(wrapper, n_vocab=len(encoding.tokens))
        return _TOKENIZERS[key]


def matcher(lark: str, vocab: Vocab, eos: int = ENGINE_EOS) -> Any:
    """A fresh llguidance LLMatcher for a Lark grammar; a bad grammar is an error."""
    llguidance = _llguidance()
    refuse_large_lark(lark)
    tokenizer = llg_tokenizer(vocab, eos)
    compiled = llguidance.grammar_from("lark", lark)
    m = on_a_deep_stack(lambda: llguidance.LLMatcher(tokenizer, compiled, log_level=0))
    if m.is_error():
        raise GrammarEngineError(f"llguidance refused the grammar: {_first_line(m.get_error())}")
    return m


def validate(text: str, dialect: Dialect, vocab: Vocab) -> None:
    """Compile a grammar with llguidance (GBNF through its converter); raise if refused."""
    if dialect == "lark":
        matcher(text, vocab)
        return
    llguidance = _llguidance()
    try:
        compiled = llguidance.grammar_from("gbnf", text)
    except ValueError as exc:
        raise GrammarEngineError(f"llguidance refused the grammar: {exc}") from None
    tokenizer = llg_tokenizer(vocab)
    error = on_a_deep_stack(lambda: llguidance.LLMatcher.validate_grammar(compiled, tokenizer))
    if error and not error.startswith("WARNING"):
        raise GrammarEngineError(f"llguidance refused the grammar: {_first_line(error)}")


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else "unknown error"


def run(m: Any, tokens: Sequence[int], detail: bool = True) -> GrammarRun:
    """Feed `tokens` to a fresh matcher: where guided decoding would have stopped the stream."""
    consumed = m.try_consume_tokens(list(tokens))
    if consumed >= len(tokens):
        # Stopped: nothing may follow (after <|return|>, <|call|>, or the engine's EOS).
        return GrammarRun(len(tokens), None, bool(m.is_stopped()), (), 0)
    if not detail:
        return GrammarRun(len(tokens), consumed, False, (), 0)
    ids = _allowed(bytes(m.compute_bitmask()))
    harmony = [t for t in ids if t < VOCAB_SIZE]
    specials = [t for t in harmony if t >= FIRST_SPECIAL]
    text = [t for t in harmony if t < FIRST_SPECIAL]
    sample = specials[:6] + (text if len(text) <= 4 else [])  # thousands of text tokens say little
    return GrammarRun(len(tokens), consumed, False, tuple(sample), len(harmony), ENGINE_EOS in ids)


def _allowed(mask: bytes) -> list[int]:
    """Token ids whose bit is set in an llguidance bitmask (little-endian 32-bit words)."""
    return [
        byte * 8 + bit
        for byte, value in enumerate(mask)
        if value
        for bit in range(8)
        if value >> bit & 1
    ]


def check(tokens: Sequence[int], vocab: Vocab, lark: str | None = None) -> GrammarRun:
    """Run a stream through the default grammar (or `lark`) with llguidance."""
    from harmony_doctor.version import __version__

    text = lark if lark is not None else emit(GrammarOptions(), "lark", __version__)
    return run(matcher(text, vocab), tokens)


def run_record(
    result: GrammarRun, tokens: Sequence[int], vocab: Vocab, source: str
) -> dict[str, Any]:
    """A GrammarRun as plain JSON-able values."""
    blocked = result.blocked_index
    return {
        "grammar": source,
        "blocked": blocked is not None,
        "blocked_index": blocked,
        "blocked_token": (
            {"id": tokens[blocked], "text": vocab.decode([tokens[blocked]])}
            if blocked is not None
            else None
        ),
        "complete": result.complete,
        "allowed_count": result.allowed_count,
        "end_allowed": result.end_allowed,
        "allowed_sample": [{"id": t, "text": vocab.decode([t])} for t in result.allowed],
    }


# --- failures known only from a log --------------------------------------------------------------


def log_verdict(kind: str, token: int | None, words: Sequence[str]) -> tuple[bool, str]:
    """Would the default grammar have blocked a failure seen only as an error message?

    Without token ids there is no stream to run, but each parser error names a state the
    grammar cannot reach: (blocked, why).
    """
    match kind:
        case "header_leftover":
            shown = " ".join(words[:6]) + (" ..." if len(words) > 6 else "")
            return True, (
                "besides the channel a header holds at most one recipient and one content "
                "type; this one held more words"
                + (f" ({shown})" if shown else "")
                + ", and the grammar refuses the first word too many"
            )
        case "unexpected_token":
            what = "the token"
            if token is not None:
                name = special_token_name(token) if token >= FIRST_SPECIAL else "text"
                what = f"token {token} ({name})"
            return True, (
                "after a stop token the grammar allows only <|start|> (after <|end|>) or the "
                f"end of the completion (after <|return|>, <|call|>); it refuses {what}"
            )
        case "unknown_role" | "missing_role":
            return True, "after <|start|> the grammar allows only the role 'assistant'"
        case "empty_channel" | "unknown_channel" | "missing_channel":
            return True, "the grammar requires <|channel|> followed by a spec channel name"
        case "header_decode":
            return True, "the grammar only allows header text that is valid UTF-8"
        case "markup_leak":
            return True, "the grammar allows no special token inside message content"
        case "header_eos":
            return False, (
                "the stream ended inside a header (max_tokens or a cut connection); a grammar "
                "cannot prevent the end of generation"
            )
        case "constrain_as_recipient":
            return False, "the grammar allows <|constrain|>json right after the channel"
    return False, f"no verdict for a {kind} failure"
