"""Token-id inputs of every shape -> one token stream (TokenInput).

Shapes: a JSON array of ints; ints separated by commas or whitespace (also a Python list or
tuple repr); JSON / JSONL / SSE documents carrying ids under the keys servers use; vLLM
request-log lines (`Generated response ...: output_token_ids: [...]`, streaming deltas joined per
request); and raw Harmony text with special-token strings. Every error names where it happened.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from harmony_doctor.choices import InputFormat
from harmony_doctor.errors import InputError
from harmony_doctor.harmony.vocab import STOP_TOKENS, VOCAB_SIZE, harmony_token_limit, id_objects
from harmony_doctor.inputs import log_words as words
from harmony_doctor.inputs.text_lines import LINE_BREAKS, numbered_lines, stripped_bounds
from harmony_doctor.models import TokenInput
from harmony_doctor.native import native_for, vllm_output_line

OUTPUT_KEYS = ("output_token_ids", "token_ids", "output_ids", "completion_token_ids")
PROMPT_KEYS = ("prompt_token_ids", "input_ids", "prompt_ids")

_IDS_RE = re.compile(r"[\[\(]?\s*-?\d+(?:\s*[,\s]\s*-?\d+)*+\s*,?\s*[\]\)]?")  # *+: no stack
_INT_RE = re.compile(r"-?\d+")
_LONE_SIGN_RE = re.compile(r"-(?!\d)")
_PLAIN_IDS = re.compile(r"[0-9, ]*")  # digits, commas and spaces only (ASCII: no other digits)
_SPECIAL_TEXT_RE = re.compile(r"<\|(?:start|end|message|channel|return|call|constrain)\|>")
_LOGPROB_ID_RE = re.compile(r"token_id:(\d+)")
_LOG_MARKER_RE = re.compile(r"\b(?:output_token_ids|prompt_token_ids)\s*[:=]\s*(?:\[|None)")
_GENERATED_RE = re.compile(  # vLLM's `Generated response <id>[ (streaming delta|complete)]`
    rf"{re.escape(words.VLLM_GENERATED)}(?P<id>[^\s:]+)(?P<mode>{words.either(words.VLLM_MODES)})?"
)
_SSE_LINE = re.compile(r"(?m)^[ \t]*(?:data|event|id):")
_SPACE = re.compile(r"\s*")
_PROMPT_LINE_RE = re.compile(r"(?:Received request|Request) (?P<id>[^\s:]+)")
_FIRST_LINE = re.compile(f"[^{LINE_BREAKS}]*")  # the first line as splitlines() cuts it
_FINISH_RE = re.compile(re.escape(words.VLLM_FINISH_KEY) + r"[:=]\s*'?(?P<reason>\w+)")


@dataclass
class _Stream:
    """Token ids gathered for one request (and choice) while reading."""

    label: str
    tokens: list[int] = field(default_factory=list)
    prompt: list[int] | None = None
    finish_reason: str | None = None
    cut: bool = False  # a list ended without its closing bracket
    line: int = 1  # the line it was first seen on


def parse_tokens(
    text: str,
    encode: Callable[[str], list[int]],
    input_format: InputFormat = "auto",
    request: str | None = None,
) -> TokenInput:
    """Find the token stream in `text`; `encode` turns Harmony text into ids when needed."""
    body = text.lstrip("\ufeff")
    if not body.strip():
        raise InputError("input is empty")
    fmt = detect_format(body) if input_format == "auto" else input_format
    if fmt == "log":  # the token ids a server log carries are its vLLM request-log lines
        fmt = "vllm-log"
    if fmt == "text":
        return _from_text(body, encode)
    if fmt == "ids":
        stream = _Stream("", _parse_id_list(body, 1, 1), cut=_opened_not_closed(body))
        return _finish(_select([stream], request), "ids", "tokens")
    if fmt == "vllm-log":
        return _finish(_select(_vllm_streams(body), request), "vllm-log", "log")
    if fmt == "json":
        doc = _load_json(body, 1)
        if isinstance(doc, list) and _is_id_list(doc):
            _check_range(doc, 1, 1)
            return _finish(_select([_Stream("", list(doc))], request), "json-array", "tokens")
        return _finish(_select(_doc_streams([(1, doc)]), request), "json", "tokens")
    if fmt == "jsonl":
        return _finish(_select(_doc_streams(_json_docs(body)), request), "jsonl", "tokens")
    raise InputError(f"unknown input format {fmt!r}")


def token_streams(text: str) -> list[tuple[TokenInput, int]]:
    """Every token stream of a JSON or JSON-lines text (responses, choices, an id list a line),
    each with the line it starts on; raises InputError when the text holds none."""
    body = text.lstrip("\ufeff")
    fmt = detect_format(body)
    if fmt == "json":
        doc = _load_json(body, 1)
        if isinstance(doc, list) and _is_id_list(doc):
            _check_range(doc, 1, 1)
            return [(_finish(_Stream("", list(doc)), "json-array", "tokens"), 1)]
        streams = _doc_streams([(1, doc)])
    elif fmt == "jsonl":
        streams = _doc_streams(_json_docs(body))
    else:
        raise InputError(f"not a JSON document of token streams ({fmt})")
    return [(_finish(s, fmt, "tokens"), s.line) for s in streams]


def detect_format(text: str) -> InputFormat:
    """Guess the shape of `text`; raises InputError when nothing looks like tokens."""
    lo, hi = stripped_bounds(text)  # text.strip(), not copied: a log may be 100 MB
    if _IDS_RE.fullmatch(text, lo, hi) and not text.startswith("[", lo):
        return "ids"
    if _has_vllm_record(text) and not text.startswith(("{", "[", "<|"), lo):
        return "vllm-log"  # a stream that starts with a special token is Harmony text
    if text.startswith(("{", "["), lo):
        stripped = text[lo:hi]
        try:
            json.loads(stripped, parse_int=_parse_int)
            return "json"
        except json.JSONDecodeError:
            pass
        except (ValueError, RecursionError):
            return "json"  # well-formed but unusable: parsing again reports why
        if stripped.startswith("{") or _json_lines(stripped):
            return "jsonl"
        if _looks_like_cut_list(stripped) or _IDS_RE.fullmatch(stripped):
            return "ids"
    if text.startswith("data:", lo):
        return "jsonl"
    if _SPECIAL_TEXT_RE.search(text):
        return "text"
    if _LOG_MARKER_RE.search(text):
        return "vllm-log"
    first = _FIRST_LINE.match(text, lo).group()[:60]  # type: ignore[union-attr]  # matches ""
    raise InputError(f"no token ids or Harmony text found (line 1 starts {first!r})")


# What `detect_format` needs to find tokens, in bytes: a JSON or SSE start, Harmony markup
# anywhere, or a first line of ids (ASCII whitespace and the separators str.strip() drops).
_TOKEN_START = re.compile(rb"[\[{]|data:")
_ID_LINE = re.compile(rb"[\[\(\]\),\s\x1c-\x1f\x80-\xff\d-]*")  # non-ASCII: detect_format decides
_LEADING = re.compile(rb"[ \t\n\r\x0b\x0c\x1c-\x1f]*")
_MARKUP = re.compile(rb"<\|")  # the regex engine searches 2x faster than `in` here


def may_hold_tokens(data: bytes) -> bool:
    """A cheap necessary condition for `detect_format` to find a token stream in `data` (its
    UTF-8 bytes): False means it finds none, or only a vLLM log's ids. A text that starts with
    a non-ASCII character (a byte-order mark, Unicode spaces) is left to `detect_format`.
    Nothing is copied: it costs a search for `<|` over the data."""
    start = _LEADING.match(data).end()  # type: ignore[union-attr]  # matches the empty string
    if start == len(data):
        return False
    if data[start] >= 0x80 or _TOKEN_START.match(data, start) or _MARKUP.search(data, start):
        return True
    end = data.find(b"\n", start)
    return _ID_LINE.fullmatch(data, start, len(data) if end < 0 else end) is not None


def _json_lines(text: str) -> bool:
    """Two JSON arrays or objects or more, one after the other (a line each, as a script
    dumps id lists, or pretty-printed, as `jq` reads a stream of values)."""
    try:
        docs = list(itertools.islice(_json_values(text), 2))
    except InputError:
        return False
    return len(docs) == 2 and all(isinstance(doc, list | dict) for _, doc in docs)


def _json_docs(text: str) -> Iterator[tuple[int, Any]]:
    """The documents of a JSON-lines text, with the line each starts on: Server-Sent Events
    (`data: {...}`) line by line, else a stream of JSON values however they are laid out."""
    if _SSE_LINE.search(text):
        return _jsonl_docs(text)
    return _json_values(text)


class _HugeId(int):
    """A JSON integer longer than any id (Python refuses past 4,300 digits): its length kept."""

    digits: int

    def __new__(cls, digits: str) -> _HugeId:
        made = super().__new__(cls, -1)
        made.digits = len(digits.lstrip("-"))
        return made


def _parse_int(digits: str) -> int:  # a JSON integer: an id, or far too long to be one
    return int(digits) if len(digits) <= 20 else _HugeId(digits)


def _out_of_range(shown: str) -> str:
    return f"{shown} is outside the range openai-harmony accepts, 0..{harmony_token_limit() - 1}"


def _json_values(text: str) -> Iterator[tuple[int, Any]]:
    decoder = json.JSONDecoder(parse_int=_parse_int)
    position, line, counted = 0, 1, 0
    while True:
        position = _SPACE.match(text, position).end()  # type: ignore[union-attr]
        if position == len(text):
            return
        line += text.count("\n", counted, position)
        counted = position
        try:
            doc, position = decoder.raw_decode(text, position)
        except json.JSONDecodeError as exc:
            raise InputError(
                f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
            ) from None
        except RecursionError:
            raise InputError(f"JSON at line {line} is nested too deeply") from None
        except ValueError as exc:
            raise InputError(f"invalid JSON at line {line}: {exc}") from None
        yield line, doc


def _has_vllm_record(text: str) -> bool:
    """A line that logs ids the way vLLM does, not only the key (Harmony text may quote it)."""
    from harmony_doctor.inputs.paste import lines_of  # a line at a time: a log is not copied

    return any(
        _LOG_MARKER_RE.search(line) and (_GENERATED_RE.search(line) or _PROMPT_LINE_RE.search(line))
        for part in lines_of(text)
        if "token_ids" in part
        for line in part.splitlines()
        if "token_ids" in line
    )


def _opened_not_closed(text: str) -> bool:
    """`[1, 2, 3` or `(1, 2`: a list whose closing bracket a log cut (vLLM --max-log-len)."""
    stripped = text.strip()
    closing = {"[": "]", "(": ")"}.get(stripped[:1])
    return closing is not None and not stripped.endswith(closing)


def _looks_like_cut_list(text: str) -> bool:
    """`[1, 2, 3` with no closing bracket: a list a log cut short."""
    return bool(re.fullmatch(r"\[\s*-?\d+(?:\s*,\s*-?\d+)*+\s*,?", text))


def _from_text(text: str, encode: Callable[[str], list[int]]) -> TokenInput:
    # A file's final newline is not part of the stream: after <|return|> it would be a token.
    body = text.rstrip("\r\n")
    tokens = encode(body)
    if not tokens:
        raise InputError("input is empty")
    return TokenInput(tokens=tuple(tokens), detected="text", format="harmony-text")


def _position(text: str, offset: int, line: int, column: int) -> tuple[int, int]:
    before = text[:offset]
    newlines = before.count("\n")
    if newlines:
        return line + newlines, offset - before.rfind("\n")
    return line, column + offset


def _parse_id_list(text: str, line: int, column: int) -> list[int]:
    """Ints separated by commas/whitespace, brackets optional; errors give line and column."""
    if _PLAIN_IDS.fullmatch(text) is not None:
        # The common shape (a logged list): no sign, no stray text. Anything out of range takes
        # the loop below, which names the offending token; each id is the shared object.
        parts = text.replace(",", " ").split()
        if all(len(digits) <= 9 for digits in parts):
            plain = [int(digits) for digits in parts]
            if not plain or max(plain) < VOCAB_SIZE:
                return list(map(id_objects().__getitem__, plain))
    tokens: list[int] = []
    for match in _INT_RE.finditer(text):
        digits = match.group()
        value = int(digits) if len(digits) <= 9 else -1  # huge: out of range anyway
        if not _in_range(value):
            where = _position(text, match.start(), line, column)
            shown = digits if len(digits) <= 20 else f"an id of {len(digits):,} digits"
            raise InputError(
                f"token {len(tokens)} at line {where[0]}, column {where[1]}: "
                + _out_of_range(shown)
            )
        tokens.append(value)
    leftover = _INT_RE.sub("", text).strip(" \t\r\n,[]()")
    if leftover.replace(",", "").strip():
        offset = next((i for i, c in enumerate(text) if c not in " \t\r\n,[]()-0123456789"), -1)
        if offset < 0:  # all that is stray is a sign without digits (`[1, -, 2]`)
            lone = _LONE_SIGN_RE.search(text)  # (every `-` followed by a digit starts an id)
            offset = lone.start() if lone is not None else 0
        where = _position(text, offset, line, column)
        raise InputError(f"unexpected {text[offset]!r} at line {where[0]}, column {where[1]}")
    return tokens


def _check_range(values: list[Any], line: int, column: int, where: str = "") -> list[int]:
    for index, value in enumerate(values):
        if isinstance(value, _HugeId):
            shown = f"an id of {value.digits:,} digits"
            raise InputError(f"{where}token {index}: " + _out_of_range(shown))
        if type(value) is not int:
            raise InputError(f"{where}token {index} is {json.dumps(value)[:40]}, not an integer")
        if not _in_range(value):
            raise InputError(f"{where}token {index}: " + _out_of_range(str(value)))
    return values


def _in_range(value: int) -> bool:
    """Whether openai-harmony accepts the id; its own table decides past VOCAB_SIZE."""
    if 0 <= value < VOCAB_SIZE:
        return True
    return VOCAB_SIZE <= value < harmony_token_limit()


# --- JSON documents --------------------------------------------------------------------------


def _jsonl_docs(text: str) -> Iterator[tuple[int, Any]]:
    for number, raw in numbered_lines(text):
        line = raw.strip()
        if line.startswith("data:"):
            line = line[5:].strip()
        if not line or line == "[DONE]" or line.startswith((":", "event:", "id:")):
            continue
        yield number, _load_json(line, number)


def _load_json(text: str, number: int) -> Any:
    try:
        return json.loads(text, parse_int=_parse_int)
    except json.JSONDecodeError as exc:
        line = number + exc.lineno - 1
        raise InputError(f"invalid JSON at line {line}, column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise InputError(f"JSON at line {number} is nested too deeply") from None
    except ValueError as exc:  # e.g. an integer with more digits than Python converts
        raise InputError(f"invalid JSON at line {number}: {exc}") from None


def _doc_streams(docs: Iterator[tuple[int, Any]] | list[tuple[int, Any]]) -> list[_Stream]:
    """Streams keyed by (response id, choice index); chunks of one response are joined."""
    streams: dict[str, _Stream] = {}
    for number, doc in docs:
        bare = isinstance(doc, list) and bool(doc) and _is_id_list(doc)  # an id list a line
        rid = f"line {number}" if bare else _doc_id(doc)
        for choice, key, values, finish in _walk_ids(doc, top=True):
            label = rid if choice is None else f"{rid}#{choice}" if rid else f"choice {choice}"
            stream = streams.setdefault(label, _Stream(label, line=number))
            where = f"line {number}: " if number > 1 else ""
            ids = _check_range(values, number, 1, where)
            if key == "prompt":
                stream.prompt = (stream.prompt or []) + ids
            else:
                stream.tokens.extend(ids)
            if finish:
                stream.finish_reason = finish
    found = [s for s in streams.values() if s.tokens or s.prompt]
    if not found:
        keys = ", ".join(OUTPUT_KEYS + PROMPT_KEYS)
        raise InputError(f"no token ids found in the JSON (looked for {keys}, token_id:N)")
    # A prompt keyed without a choice belongs to every choice of the same response.
    for s in found:
        if s.prompt is None and "#" in s.label and s.label.split("#")[0] in streams:
            s.prompt = streams[s.label.split("#")[0]].prompt
    return [s for s in found if s.tokens] or found


def _doc_id(doc: Any) -> str:
    if isinstance(doc, dict):
        for key in ("id", "request_id", "rid"):
            value = doc.get(key)
            if isinstance(value, str | int) and not isinstance(value, bool):
                return str(value)
    return ""


def _walk_ids(
    node: Any, choice: int | None = None, top: bool = False
) -> Iterator[tuple[int | None, str, list[Any], str | None]]:
    """(choice, "output"|"prompt", ids, finish_reason) for every id list in a document (a
    document that is itself an id list, one of a JSON-lines file, is its own output)."""
    if top and isinstance(node, list) and node and _is_id_list(node):
        yield choice, "output", node, None
        return
    if isinstance(node, list):
        for item in node:
            yield from _walk_ids(item, choice)
        return
    if not isinstance(node, dict):
        return
    finish = node.get("finish_reason") if isinstance(node.get("finish_reason"), str) else None
    found_output = False
    for key, value in node.items():
        if key in OUTPUT_KEYS and isinstance(value, list) and _is_id_list(value):
            found_output = True
            yield choice, "output", value, finish
        elif key in PROMPT_KEYS and isinstance(value, list) and _is_id_list(value):
            yield choice, "prompt", value, None
        elif key in ("choices", "outputs") and isinstance(value, list):
            for position, item in enumerate(value):
                index = item.get("index", position) if isinstance(item, dict) else position
                yield from _walk_ids(item, index if isinstance(index, int) else position)
        elif key == "logprobs" and not found_output and isinstance(value, dict | list):
            ids = [int(m) for m in _logprob_ids(value)]
            if ids:
                yield choice, "output", ids, finish
        elif key != "top_logprobs" and isinstance(value, dict | list):
            yield from _walk_ids(value, choice)


def _is_id_list(values: list[Any]) -> bool:
    return all(not isinstance(v, dict | list) for v in values)


def _logprob_ids(node: Any) -> Iterator[str]:
    """`token_id:123` strings in order, skipping the alternatives under top_logprobs."""
    if isinstance(node, list):
        for item in node:
            yield from _logprob_ids(item)
    elif isinstance(node, dict):
        for key, value in node.items():
            if key == "top_logprobs":
                continue
            if key == "token" and isinstance(value, str):
                match = _LOGPROB_ID_RE.fullmatch(value)
                if match:
                    yield match.group(1)
            elif isinstance(value, dict | list):
                yield from _logprob_ids(value)


# --- vLLM request logs -----------------------------------------------------------------------


@dataclass(frozen=True)
class VllmRecord:
    """One vLLM request-log line that carries token ids."""

    request_id: str
    kind: Literal["output", "complete", "prompt"]
    ids: tuple[int, ...] | None  # None when the line logs `None`
    cut: bool  # the list lost its closing bracket
    finish_reason: str | None
    delta: bool = False  # one `(streaming delta)` of a streamed response


def parse_vllm_line(line: str, number: int) -> VllmRecord | None:
    """The token ids a vLLM request-log line carries, or None for any other line."""
    if "token_ids" not in line:
        return None
    generated = _GENERATED_RE.search(line)
    if generated is not None:
        ids, cut = _ids_after(line, words.VLLM_OUTPUT_KEY, number)
        finish = _FINISH_RE.search(line[line.rfind(words.VLLM_FINISH_KEY) :])
        reason = finish["reason"] if finish else None
        if reason in words.VLLM_NO_REASONS:
            reason = None
        mode = generated["mode"]
        complete = mode == words.VLLM_COMPLETE
        kind: Literal["output", "complete"] = "complete" if complete else "output"
        return VllmRecord(generated["id"], kind, ids, cut, reason, delta=mode == words.VLLM_DELTA)
    prompt_line = _PROMPT_LINE_RE.search(line)
    if prompt_line is not None and "prompt_token_ids" in line:
        ids, cut = _ids_after(line, "prompt_token_ids", number)
        return VllmRecord(prompt_line["id"], "prompt", ids, cut, None)
    return None


def parse_vllm_bytes(raw: bytes, number: int, native: bool | None = None) -> VllmRecord | None:
    """`parse_vllm_line` of the line's bytes decoded as UTF-8 (with replacement): Rust reads the
    common `Generated response` line and hands any other or doubtful one to `parse_vllm_line`,
    the reference it is tested equal to. `native`: whether to try Rust; None asks `use_native()`,
    which reads the environment (~1 us) at each call: a caller deciding once passes its answer."""
    if native_for(native):
        parsed = vllm_output_line(raw, VOCAB_SIZE)
        if parsed is not None:
            return VllmRecord(
                parsed.request_id,
                "complete" if parsed.complete else "output",
                parsed.ids,
                False,  # the extension only reads lists with their closing bracket
                parsed.finish_reason,
                parsed.delta,
            )
    return parse_vllm_line(raw.decode("utf-8", "replace"), number)


class RequestStreams:
    """Token ids of vLLM requests, gathered line by line (streaming deltas joined in order)."""

    def __init__(self) -> None:
        self.streams: dict[str, _Stream] = {}

    def add(self, record: VllmRecord) -> None:
        stream = self.streams.setdefault(record.request_id, _Stream(record.request_id))
        if record.kind == "prompt":
            if record.ids is not None:
                stream.prompt = list(record.ids)
            return
        if record.ids is not None:
            if record.kind == "complete":
                if len(record.ids) >= len(stream.tokens):
                    stream.tokens = list(record.ids)
            else:
                stream.tokens.extend(record.ids)
            stream.cut = stream.cut or record.cut
        if record.finish_reason is not None:
            stream.finish_reason = record.finish_reason

    def pop(self, request_id: str) -> TokenInput | None:
        """The finished request's stream as a TokenInput (None if it holds no output ids)."""
        stream = self.streams.pop(request_id, None)
        if stream is None or not stream.tokens:
            return None
        return _finish(stream, "vllm-log", "log")


def _vllm_streams(text: str) -> list[_Stream]:
    """Per request: the prompt ids, and the output ids (streaming deltas joined in order)."""
    gathered = RequestStreams()
    for number, line in numbered_lines(text):
        record = parse_vllm_line(line, number)
        if record is not None:
            gathered.add(record)
    found = [s for s in gathered.streams.values() if s.tokens or s.prompt]
    if not found:
        raise InputError("no vLLM request-log lines with output_token_ids or prompt_token_ids")
    return [s for s in found if s.tokens] or found


def logged_completions(text: str) -> list[TokenInput]:
    """Every completion a vLLM request log carries as output token ids, one stream each."""
    try:
        streams = _vllm_streams(text)
    except InputError:
        return []
    return [_finish(s, "vllm-log", "log") for s in streams if s.tokens]


def _ids_after(line: str, key: str, number: int) -> tuple[tuple[int, ...] | None, bool]:
    """The id list after the last `key: [` in a log line, and whether its `]` is missing."""
    at = line.rfind(key)
    rest = line[at + len(key) :].lstrip(" :=")
    if rest.startswith(words.VLLM_NO_IDS):
        return None, False
    if not rest.startswith("["):
        raise InputError(f"line {number}: {key} is not followed by a list")
    close = rest.find("]")
    inner = rest[1:] if close < 0 else rest[1:close]
    column = len(line) - len(rest) + 2
    return tuple(_parse_id_list(inner, number, column)), close < 0


# --- selection -------------------------------------------------------------------------------


def _select(streams: list[_Stream], request: str | None) -> _Stream:
    if request is not None:
        chosen = [s for s in streams if s.label == request or s.label.split("#")[0] == request]
        if not chosen:
            known = ", ".join(s.label for s in streams[:5])
            raise InputError(f"no request {request!r} in the input (found: {known})")
        streams = chosen
    if len(streams) > 1:
        shown = ", ".join(s.label or "(unnamed)" for s in streams[:5])
        more = f" and {len(streams) - 5} more" if len(streams) > 5 else ""
        raise InputError(
            f"input holds {len(streams)} token streams ({shown}{more}); choose one with --request"
        )
    return streams[0]


def _finish(stream: _Stream, fmt: str, detected: Literal["tokens", "log"]) -> TokenInput:
    notes: list[str] = []
    tokens = stream.tokens
    prompt = tuple(stream.prompt) if stream.prompt is not None else None
    if not tokens and prompt:
        tokens, prompt = list(prompt), None
        notes.append("only prompt token ids were found; they are replayed as the stream")
    if not tokens:
        raise InputError("input is empty: the token list has no ids")
    truncated = stream.cut
    if stream.cut:
        notes.append(
            "the token list ends without its closing bracket: the log cut it (vLLM "
            "--max-log-len cuts lists without a marker); the ids after the cut are unknown"
        )
    if stream.finish_reason == "stop" and tokens[-1] not in STOP_TOKENS:
        truncated = True
        notes.append(
            "finish_reason is stop but the stream does not end with a stop token: the log "
            "probably cut the list (vLLM --max-log-len); the tokens after the cut are unknown"
        )
    return TokenInput(
        tokens=tuple(tokens),
        detected=detected,
        format=fmt,
        request_id=stream.label or None,
        finish_reason=stream.finish_reason,
        truncated=truncated,
        prompt_tokens=prompt,
        notes=tuple(notes),
    )
