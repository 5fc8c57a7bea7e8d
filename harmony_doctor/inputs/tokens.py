"""Token-id inputs of every shape -> one token stream (TokenInput).

Shapes: a JSON array of ints; ints separated by commas or whitespace (also a Python list or
tuple repr); JSON / JSONL / SSE documents carrying ids under the keys servers use; vLLM
request-log lines (`Generated response ...: output_token_ids: [...]`, streaming deltas joined per
request); and raw Harmony text with special-token strings. Every error names where it happened.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from harmony_doctor.choices import InputFormat
from harmony_doctor.errors import InputError
from harmony_doctor.inputs.id_lists import (
    Stream,
    check_range,
    finish,
    parse_id_list,
    parse_int,
    select,
)
from harmony_doctor.inputs.text_lines import numbered_lines
from harmony_doctor.inputs.token_sniff import detect_format, json_values
from harmony_doctor.inputs.vllm_requests import vllm_streams
from harmony_doctor.lazy_regex import Pattern
from harmony_doctor.models import TokenInput

OUTPUT_KEYS = ("output_token_ids", "token_ids", "output_ids", "completion_token_ids")
PROMPT_KEYS = ("prompt_token_ids", "input_ids", "prompt_ids")

_LOGPROB_ID_RE = Pattern(r"token_id:(\d+)")
_SSE_LINE = Pattern(r"(?m)^[ \t]*(?:data|event|id):")


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
        stream = Stream("", parse_id_list(body, 1, 1), cut=_opened_not_closed(body))
        return finish(_one([stream], request), "ids", "tokens")
    if fmt == "vllm-log":
        return finish(_one(vllm_streams(body), request), "vllm-log", "log")
    if fmt in ("json", "jsonl"):
        docs = _json_streams(body, fmt)
        if isinstance(docs, Stream):
            return finish(_one([docs], request), "json-array", "tokens")
        chosen = select(docs.labels, request)
        return finish(next(docs.streams(chosen)), fmt, "tokens")
    raise InputError(f"unknown input format {fmt!r}")


def token_streams(text: str) -> TokenStreams:
    """Every token stream of a JSON or JSON-lines text (responses, choices, an id list a line),
    each with the line it starts on; raises InputError when the text holds none."""
    body = text.lstrip("\ufeff")
    fmt = detect_format(body)
    if fmt not in ("json", "jsonl"):
        raise InputError(f"not a JSON document of token streams ({fmt})")
    docs = _json_streams(body, fmt)
    if isinstance(docs, Stream):
        return TokenStreams(1, iter([(finish(docs, "json-array", "tokens"), 1)]))
    each = ((finish(s, fmt, "tokens"), s.line) for s in docs.streams())
    return TokenStreams(len(docs.labels), each)


def _one(streams: list[Stream], request: str | None) -> Stream:
    chosen = select([s.label for s in streams], request)
    return next(s for s in streams if s.label == chosen)


def _json_streams(body: str, fmt: InputFormat) -> Stream | _DocStreams:
    """A JSON text that is one list of ids as its stream (checked), or the JSON documents'."""
    if fmt == "jsonl":
        return _DocStreams(lambda: _json_docs(body))
    doc = _load_json(body, 1)
    if isinstance(doc, list) and _is_id_list(doc):
        return Stream("", check_range(doc))
    return _DocStreams(lambda: [(1, doc)])


def _json_docs(text: str) -> Iterator[tuple[int, Any]]:
    """The documents of a JSON-lines text, with the line each starts on: Server-Sent Events
    (`data: {...}`) line by line, else a stream of JSON values however they are laid out."""
    if _SSE_LINE.search(text):
        return _jsonl_docs(text)
    return json_values(text)


def _opened_not_closed(text: str) -> bool:
    """`[1, 2, 3` or `(1, 2`: a list whose closing bracket a log cut (vLLM --max-log-len)."""
    stripped = text.strip()
    closing = {"[": "]", "(": ")"}.get(stripped[:1])
    return closing is not None and not stripped.endswith(closing)


def _from_text(text: str, encode: Callable[[str], list[int]]) -> TokenInput:
    # A file's final newline is not part of the stream: after <|return|> it would be a token.
    body = text.rstrip("\r\n")
    tokens = encode(body)
    if not tokens:
        raise InputError("input is empty")
    return TokenInput(tokens=tuple(tokens), detected="text", format="harmony-text")


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
        return json.loads(text, parse_int=parse_int)
    except json.JSONDecodeError as exc:
        line = number + exc.lineno - 1
        raise InputError(f"invalid JSON at line {line}, column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise InputError(f"JSON at line {number} is nested too deeply") from None
    except ValueError as exc:  # e.g. an integer with more digits than Python converts
        raise InputError(f"invalid JSON at line {number}: {exc}") from None


@dataclass(frozen=True)
class TokenStreams:
    """The token streams of a text: how many, and each (with the line it starts on) as it is
    read, so that a JSON-lines file of 60,000 id lists is not held as 60,000 lists at once."""

    count: int
    each: Iterator[tuple[TokenInput, int]]


@dataclass
class _Seen:
    """What the first reading of JSON documents learns of a stream; its ids are not kept."""

    line: int  # the line it starts on
    last: int  # the last line that adds to it
    tokens: bool = False
    prompt: bool = False  # prompt ids found
    prompt_keyed: bool = False  # a prompt key found, even an empty list


class _DocStreams:
    """Streams keyed by (response id, choice index) across JSON documents; chunks of one
    response are joined. `docs` gives the documents again each time it is called: they are
    read once to check every id and learn which lines each stream spans, then again to gather
    each stream's ids and hand it on once its last line is read."""

    def __init__(self, docs: Callable[[], Iterable[tuple[int, Any]]]) -> None:
        self._docs = docs
        seen: dict[str, _Seen] = {}
        for number, label, key, values, _ in self._items():
            where = f"line {number}: " if number > 1 else ""
            ids = check_range(values, where)
            mark = seen.setdefault(label, _Seen(number, number))
            mark.last = number
            if key == "prompt":
                mark.prompt_keyed = True
                mark.prompt = mark.prompt or bool(ids)
            else:
                mark.tokens = mark.tokens or bool(ids)
        found = [label for label, mark in seen.items() if mark.tokens or mark.prompt]
        if not found:
            keys = ", ".join(OUTPUT_KEYS + PROMPT_KEYS)
            raise InputError(f"no token ids found in the JSON (looked for {keys}, token_id:N)")
        self.labels = [label for label in found if seen[label].tokens] or found
        # A prompt keyed without a choice belongs to every choice of the same response.
        self._base = {
            label: label.split("#")[0]
            for label in self.labels
            if not seen[label].prompt_keyed and "#" in label and label.split("#")[0] in seen
        }
        self._ready = {
            label: max(seen[label].last, seen[self._base[label]].last if label in self._base else 0)
            for label in self.labels
        }
        self._users = dict.fromkeys(self.labels, 1)
        for base in self._base.values():
            self._users[base] = self._users.get(base, 0) + 1

    def streams(self, chosen: str | None = None) -> Iterator[Stream]:
        """Each stream (or the one `chosen`) in the order streams start, as soon as it ends."""
        order = [label for label in self.labels if chosen is None or label == chosen]
        wanted = None if chosen is None else {chosen, self._base.get(chosen)}
        users = dict(self._users)
        held: dict[str, Stream] = {}
        done = 0
        for number, label, key, values, finish_reason in self._items():
            while done < len(order) and self._ready[order[done]] < number:  # its lines all read
                yield self._handed(order[done], held, users)
                done += 1
            if label not in users or (wanted is not None and label not in wanted):
                continue
            stream = held.setdefault(label, Stream(label, line=number))
            ids = check_range(values)
            if key == "prompt":
                stream.prompt = (stream.prompt or []) + ids
            else:
                stream.tokens.extend(ids)
            if finish_reason:
                stream.finish_reason = finish_reason
        for label in order[done:]:
            yield self._handed(label, held, users)

    def _handed(self, label: str, held: dict[str, Stream], users: dict[str, int]) -> Stream:
        stream = held[label]
        base = self._base.get(label)
        if base is not None:
            stream.prompt = held[base].prompt
        for owner in (label, base):
            if owner is not None:
                users[owner] -= 1
                if not users[owner]:
                    del held[owner]
        return stream

    def _items(self) -> Iterator[tuple[int, str, str, list[Any], str | None]]:
        """(line, stream label, "output"|"prompt", ids, finish_reason) of every id list."""
        for number, doc in self._docs():
            bare = isinstance(doc, list) and bool(doc) and _is_id_list(doc)  # an id list a line
            rid = f"line {number}" if bare else _doc_id(doc)
            for choice, key, values, finish_reason in _walk_ids(doc, top=True):
                label = rid if choice is None else f"{rid}#{choice}" if rid else f"choice {choice}"
                yield number, label, key, values, finish_reason


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
