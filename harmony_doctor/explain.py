"""Any input -> what `explain` reports: the failures a log records, or the diagnosis of a stream.

The decision between the two is made here, once, for the library and the command line alike
(`read_as`, `explain_input`; the CLI only renders what it returns): a text that holds Harmony
failures and no token stream to replay is a log; anything else is read as token ids (or
Harmony text) and diagnosed. A paste (Markdown, CI log, pytest output, flattened traceback,
code) is read through its furniture first (inputs/paste.py): only a piece that is model output
is replayed, never the prose around it. Either may be checked against the guided-decoding
grammar.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING

from harmony_doctor.choices import InputFormat, ParseRole
from harmony_doctor.errors import InputError
from harmony_doctor.inputs.lengths import one_completion, refuse_long_lists
from harmony_doctor.inputs.paste import Paste, Piece, lines_of, opens_as_log, read_paste
from harmony_doctor.inputs.token_sniff import detect_format
from harmony_doctor.lazy_regex import Pattern

if TYPE_CHECKING:
    from harmony_doctor.evidence.prose import Description
    from harmony_doctor.harmony.vocab import Vocab
    from harmony_doctor.inputs.reader import TextInput
    from harmony_doctor.models import Diagnosis, LogError, TokenInput
    from harmony_doctor.streams.guided import LogCheck, StreamCheck

_OUTPUT_IDS = Pattern(r"\boutput_token_ids\s*[:=]\s*\[")


@dataclass(frozen=True)
class LogExplanation:
    """The Harmony failures a log excerpt records, once each, and how long the excerpt is.

    `completions`: the diagnoses of the completions the log carries as token ids (vLLM
    --enable-log-outputs), replayed as scan replays them. `related`: the text shows anything of
    Harmony or of a server (markup, token ids, a failure, a server's log lines); when it shows
    nothing, `explain` says so rather than calling the text clean.
    """

    errors: tuple[LogError, ...]
    lines: int
    completions: tuple[Diagnosis, ...] = ()
    related: bool = True
    note: str | None = None  # what the input was recognised as, when that is all there is
    described: Description | None = None  # what a text with no evidence describes


@dataclass(frozen=True)
class ExplainedLog:
    """What `explain` reports for an input that is a log: its failures (placed on the lines of
    the input as given, when a wrapper was removed) and, when asked, the grammar's verdict on
    each of them (`check`)."""

    explanation: LogExplanation
    check: LogCheck | None = None


@dataclass(frozen=True)
class ExplainedStream:
    """What `explain` reports for an input that is a token stream: openai-harmony's diagnosis
    and, when asked, where guided decoding with the grammar would have stopped it (`check`)."""

    diagnosis: Diagnosis
    check: StreamCheck | None = None


# What shows a text has to do with Harmony or with a server's log, when no failure does:
# Harmony markup, token ids, a known server, an API request, a log level, a traceback.
_RELATED = Pattern(
    r"<\|[a-z_]+\|>|_token_ids|harmony|\(APIServer pid=|\b(?:vllm|sglang|lmdeploy|ollama)\b"
    r"|\b(?:POST|GET) /v1/|\b(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL)\b"
    r"|Traceback \(most recent call last\)|Exception Group Traceback",
)


def mentions_harmony(text: str) -> bool:
    """Whether a text shows anything of Harmony or of a server that parses it."""
    return _RELATED.search(text) is not None


def refuse_empty_json(text: str) -> None:
    """`null`, `[]`, `{}` or `""`: nothing could be read at all (InputError)."""
    body = text.strip().lstrip("\ufeff")
    if body in ("null", "[]", "{}", '""'):
        raise InputError(f"nothing to read: the input is the JSON value {body}")


@dataclass(frozen=True)
class Reading:
    """What explain reads an input as, before any vocabulary is loaded.

    `errors`: the failures of a log (None: not a log). Otherwise `stream` is the text to replay
    as one token stream (the input, or the one piece of a paste that is a completion), or
    `pieces` the pieces of a paste to replay as fragments (quoted output inside prose: an error
    they show is reported, where they stop is not). `shown`: the stream was shown to a user as
    text (a caption says so): clean Harmony in it is markup returned unparsed (HD205).
    `offset`: lines of the input before the stream's first line.
    """

    errors: tuple[LogError, ...] | None
    stream: str = ""
    pieces: tuple[Piece, ...] = ()
    shown: bool = False
    offset: int = 0
    note: str | None = None  # what the input was recognised as, when nothing failed
    text: str | None = None  # the text a log was read from, when not the input (a paste's)
    prompt: bool = False  # the stream is a prompt the paste shows: its open end is no fault


def log_failures(
    text: str, input_format: InputFormat = "auto", request: str | None = None
) -> tuple[LogError, ...] | None:
    """The failures in a log excerpt, or None when the input is a token stream to replay."""
    return read_as(text, input_format, request).errors


def read_as(text: str, input_format: InputFormat = "auto", request: str | None = None) -> Reading:
    """What `text` is to explain: a log and its failures, a stream, or a paste's pieces.

    A paste (Markdown, CI log, pytest output, flattened traceback, code) is read through its
    furniture first (inputs/paste.py): its failures are read from the unquoted text and put
    back on the input's lines; a paste that is one completion and nothing else is that
    completion; prose around markup is never replayed, only the pieces that are output.
    """

    body = text.lstrip("\ufeff")
    if input_format == "log":
        return Reading(_only_harmony(_extract(text), text))
    if input_format != "auto" or request is not None or not body.strip():
        # A forced shape or a chosen request is token input; the reader reports empty input.
        return Reading(None, text)
    paste = read_paste(body)
    if not paste.furnished:
        return _read_plain(text, body)
    from harmony_doctor import logs
    from harmony_doctor.evidence import combine

    found = _only_harmony(_extract(paste.text), paste.text)
    if not found:
        stripped = logs.find_stripped(paste.text)
        found = (stripped,) if stripped is not None else ()
    if not found:
        leak = next(filter(None, (combine.leaked(p.text) for p in paste.pieces)), None)
        leak = leak or combine.quoted_leak(paste.text) or combine.cut_traceback(paste.text)
        found = (leak,) if leak is not None else ()
    if found:
        return Reading(tuple(_placed(error, paste) for error in found), text=paste.text)
    completions = [p for p in paste.pieces if _completion(p)]
    if not any(p.kind == "ids" for p in completions):  # ids under any key, or none
        completions += [
            replace(p, line=paste.source_line(p.line)) for p in combine.id_pieces(paste.text)
        ]
    if not paste.prose and len(completions) == 1 and not completions[0].spread:
        piece = completions[0]  # the paste is this completion, maybe under a caption
        reading = _read_plain(piece.text, piece.text)
        shown = paste.captions > 0 and piece.kind != "ids" and not piece.spread
        shown = shown and not combine.documented_above(paste.text, piece.line)  # `Format:`
        if combine.shows_prompt(paste.text, piece.text):  # a rendered prompt, not a reply
            return replace(reading, prompt=True, offset=piece.line - 1)
        return replace(reading, shown=shown, offset=piece.line - 1)
    fragments = tuple(
        replace(p, elided=True) if combine.shows_prompt(paste.text, p.text) else p
        for p in completions
        if not p.spread
    )
    if fragments:
        return Reading(None, pieces=fragments)
    if "prose" not in paste.shapes and not paste.pieces:
        inner = paste.text.strip("\n")
        reading = _read_plain(inner, inner)
        return reading if reading.errors is None else replace(reading, text=paste.text)
    said = combine.said_leak(paste.text)  # markup a sentence quotes, saying it came back
    if said is not None:
        return Reading((_placed(said, paste),), text=paste.text)
    return Reading((), note="a paste (" + ", ".join(sorted(paste.shapes)) + ")", text=paste.text)


def _read_plain(text: str, body: str) -> Reading:
    """A text with no paste furniture: a log, a stream, or a JSON body without ids."""
    try:
        shape = detect_format(body)
    except InputError:
        from harmony_doctor import logs

        # No tokens at all: whatever the log holds, else Harmony text stripped of its special
        # tokens (vLLM's `output:` field), which cannot be replayed and is not clean.
        found = _only_harmony(_extract(text), text)
        if found:
            return Reading(found)
        from harmony_doctor.evidence import combine

        shown = logs.find_stripped(body) or combine.cut_traceback(body)
        return Reading((shown,) if shown is not None else found)
    if shape not in ("text", "json", "jsonl", "vllm-log"):
        return Reading(None, text)  # ids: the log readers (many regexes) never load for them
    found = _without_requests(_only_harmony(_extract(text), text), body, shape)
    from harmony_doctor.evidence import combine  # what only a text needs: never for ids

    if shape == "text" and not found and combine.not_a_stream(body):
        # a loader's or a config's listing of the special tokens, or prose quoting markup:
        # a leak only where a sentence says the reply held it
        said = combine.said_leak(body)
        return Reading(found if said is None else (said,))
    if shape in ("text", "vllm-log") and (found or (shape == "text" and opens_as_log(body))):
        # text: special-token strings inside error messages or log records (a template dump,
        # a logged prompt), not a Harmony stream; vllm-log: a log with failures, its
        # completions replayed as scan replays them.
        return Reading(found)
    if shape == "vllm-log" and not found and not _request_log(body):
        return Reading(found)  # ids under vLLM's key names, not in its log: the ids reader's
    if shape in ("text", "vllm-log"):
        return Reading(None, text)
    from harmony_doctor.inputs.tokens import parse_tokens  # ids in sight: their reader

    try:
        parse_tokens(body, _no_encode, shape, None)
    except InputError as exc:
        if found:
            return Reading(found)  # a JSON error body without token ids
        if _chat_request(body, shape):
            raise InputError(
                "this is a chat request (messages, no token ids): explain reads what a server "
                "returned or logged; `harmony-doctor render FILE` shows how the request renders"
            ) from None
        if not _holds_no_ids(exc):
            raise  # ids there but unusable (out of range, several streams): the input's fault
        leak = combine.leaked(body)
        if leak is not None:
            return Reading((leak,))
        return Reading((), note="a JSON document without token ids")
    return Reading(None, text)  # token ids: the stream (markup in it is the stream's)


def _request_log(body: str) -> bool:
    """Ids the way vLLM's request log carries them, not only its key names (a
    `RequestOutput(... prompt_token_ids=[...])` repr is no request log)."""
    from harmony_doctor.inputs.tokens import parse_tokens

    try:
        parse_tokens(body, _no_encode, "vllm-log")
    except InputError as exc:
        return not str(exc).startswith("no vLLM request-log lines")
    return True


def _holds_no_ids(exc: InputError) -> bool:
    """The JSON reader found no token ids at all (or a text that only starts like JSON)."""
    return str(exc).startswith(("no token ids found", "invalid JSON"))


def _chat_request(body: str, shape: InputFormat) -> bool:
    """A chat request (`messages`, no `choices`): what a client sent, not what came back."""
    if shape != "json":
        return False
    try:
        doc = json.loads(body)
    except (ValueError, RecursionError):
        return False
    return isinstance(doc, dict) and isinstance(doc.get("messages"), list) and "choices" not in doc


def _without_requests(
    found: tuple[LogError, ...], body: str, shape: InputFormat
) -> tuple[LogError, ...]:
    """No markup leak in a message a user, system, developer or tool wrote in a request: only
    output returned to a client leaks (HD205)."""
    if shape != "json" or not any(e.kind == "markup_leak" for e in found):
        return found
    try:
        doc = json.loads(body)
    except (ValueError, RecursionError):
        return found
    messages = doc.get("messages") if isinstance(doc, dict) else None
    if not isinstance(messages, list):
        return found
    written = set()
    for message in messages:
        if isinstance(message, dict) and message.get("role") != "assistant":
            for value in message.values():
                if isinstance(value, str):
                    written.add(value)
    return tuple(e for e in found if not (e.kind == "markup_leak" and e.message in written))


def _only_harmony(found: tuple[LogError, ...], text: str) -> tuple[LogError, ...]:
    """The failures without engines' parse failures over another model family's output."""
    from harmony_doctor.logs.families import ENGINE_KINDS, shows_another_family

    if not any(e.kind in ENGINE_KINDS for e in found) or not shows_another_family(text):
        return found
    return tuple(e for e in found if e.kind not in ENGINE_KINDS)


def _extract(text: str) -> tuple[LogError, ...]:
    """`logs.extract_text`, the lines read one at a time (a large log is held once, as text)."""
    from harmony_doctor import logs

    return tuple(sorted(logs.extract_errors(lines_of(text.lstrip("\ufeff"))), key=_line))


def _line(error: LogError) -> int:
    return error.line


def _completion(piece: Piece) -> bool:
    """A piece that is model output to replay: Harmony text, a JSON body or an id list."""
    body = piece.text.strip()
    if piece.kind == "ids":
        return True
    if body.startswith("<|"):
        from harmony_doctor.evidence import combine

        return not combine.named_in_prose(body)
    if piece.kind != "block":
        return False
    try:
        shape = detect_format(body)
    except InputError:
        return False
    return shape in ("ids", "json", "jsonl")


def _placed(error: LogError, paste: Paste) -> LogError:
    first, last = error.span
    return replace(
        error,
        line=paste.source_line(error.line),
        span=(paste.source_line(first), paste.source_line(last)),
    )


def _no_encode(text: str) -> list[int]:  # pragma: no cover - JSON shapes never encode
    raise InputError("JSON input holds Harmony text, not token ids")


def place_in_input(errors: tuple[LogError, ...], given: TextInput) -> tuple[LogError, ...]:
    """Failures found in unwrapped text, put back where the input as given has them.

    Lines become lines of the wrapped file (Docker, CRI, journald...), and a log line that
    carries no pid or time of its own takes the wrapper's.
    """
    if given.unwrapper is None or not given.wrappers:
        return errors
    meta = {m.line: m for m in given.meta}
    placed = []
    for error in errors:
        facts = meta.get(error.line)
        pid = error.pid if error.pid is not None or facts is None else facts.pid
        stamp = error.timestamp
        if stamp is None and facts is not None and facts.stamp is not None:
            stamp = facts.stamp.decode("ascii")
        first, last = error.span
        span = (given.source_line(first), given.source_line(last))
        line = given.source_line(error.line)
        placed.append(replace(error, line=line, span=span, pid=pid, timestamp=stamp))
    return tuple(placed)


def count_lines(text: str) -> int:
    """Lines in a text, the last one counted even without its newline."""
    return text.count("\n") + (0 if text.endswith("\n") or not text else 1)


def explain_input(
    given: TextInput,
    vocab: Vocab | Path | None = None,
    *,
    input_format: InputFormat = "auto",
    request: str | None = None,
    role: ParseRole = "assistant",
    strict: bool = True,
    open_stream: bool = False,
    check_grammar: bool = False,
    grammar_file: str | Path | None = None,
) -> ExplainedLog | ExplainedStream:
    """What `harmony-doctor explain` reports for an input read whole (`read_input`): a log's
    failures, or a token stream's diagnosis; with `check_grammar` (or a Lark `grammar_file`,
    which implies it), the guided-decoding grammar's verdict too.

    `vocab` (a Vocab, or the path of one; None: the bundled copy) is loaded only when a stream
    is judged, or a log carries completions as token ids to replay.
    """

    text = given.text
    refuse_empty_json(text)
    loaded = _loader(vocab)
    checking = check_grammar or grammar_file is not None
    refuse_long_lists(text)
    reading = read_as(text, input_format, request)
    found = reading.errors
    result: Diagnosis | None = None
    if found is None and reading.pieces:  # output quoted inside prose: judge each piece
        result = _first_failing(reading.pieces, loaded(), role, strict)
        if result is None:  # clean pieces: a leak, when the words around them say so
            from harmony_doctor.evidence import combine

            leak = combine.described_leak(text, reading.pieces)
            found = () if leak is None else (leak,)
    elif found is None:
        from harmony_doctor.inputs.tokens import parse_tokens
        from harmony_doctor.streams.diagnose import diagnose

        known = loaded()
        inp = one_completion(parse_tokens(reading.stream, known.encode, input_format, request))
        opened = open_stream or reading.prompt
        if _raw_prompt(inp, reading.stream):
            found = ()  # no Harmony stream: nothing to replay
            reading = replace(reading, note=RAW_PROMPT)
        else:
            judged = known.ready_to_judge()
            result = diagnose(inp, judged, role, strict=strict, open_stream=opened)
        if result is not None and reading.shown and not result.findings:
            # clean Harmony a user was shown as text
            from harmony_doctor.logs.describe import shown_markup

            found = (shown_markup(reading.stream, reading.offset + 1),)
    if found is not None:  # a log of errors, not a token stream
        from harmony_doctor.evidence import combine

        found = combine.refined(place_in_input(found, given), text)
        log_check = None
        if checking:
            from harmony_doctor.streams.guided import check_log

            log_check = check_log(found, custom=grammar_file is not None)
        read = reading.text if reading.text is not None else text
        explained = explain_log(read, found, loaded, role, strict, open_stream)
        explained = replace(explained, lines=count_lines(text))  # the input's lines, as given
        if reading.pieces:  # token ids quoted in the paste were replayed, and were clean
            explained = replace(explained, related=True, described=None)
        if reading.note is not None:
            explained = replace(explained, note=reading.note)
        return ExplainedLog(explained, log_check)
    assert result is not None
    stream_check = None
    if checking:
        from harmony_doctor.inputs.reader import read_text
        from harmony_doctor.streams.guided import check_stream

        known = loaded()
        lark, source = read_text(str(grammar_file)) if grammar_file is not None else (None, "")
        stream_check = check_stream(result, known, lark, source)
    return ExplainedStream(result, stream_check)


RAW_PROMPT = (
    "a logged prompt's token ids with no Harmony special token: a raw prompt, or another "
    "model's vocabulary; no Harmony stream to replay"
)


def _raw_prompt(inp: TokenInput, text: str) -> bool:
    """Whether `inp` is a logged prompt's ids only (no completion ids) holding no special token:
    a gpt-oss chat prompt always holds <|start|> and <|message|>, so these are a raw text
    prompt or another model's vocabulary (a Llama 3 prompt opens with 128000), never messages
    to replay as a reply."""
    from harmony_doctor.harmony.vocab import FIRST_SPECIAL

    return (
        inp.format == "vllm-log"
        and "prompt_token_ids" in text
        and _OUTPUT_IDS.search(text) is None
        and all(token < FIRST_SPECIAL for token in inp.tokens)
    )


def _first_failing(
    pieces: Iterable[Piece], vocab: Vocab, role: ParseRole, strict: bool
) -> Diagnosis | None:
    """The diagnosis of the first piece that shows an error, replayed as the fragment it is
    (a piece a person cut short is not judged where it stops); None when none does. Token ids
    are what a model wrote, never a person's illustration: a warning their replay gives (a
    header without <|channel|>) is a finding too, as is a warning of a shape only a model
    writes (`_a_finding`)."""
    from harmony_doctor.harmony.vocab import START
    from harmony_doctor.inputs.tokens import parse_tokens
    from harmony_doctor.streams.diagnose import diagnose

    known = vocab.ready_to_judge()
    for piece in pieces:
        try:
            inp = one_completion(parse_tokens(piece.text, vocab.encode))
        except InputError:
            continue
        # A fragment that opens with <|start|> quotes whole messages, not a completion.
        opened = inp.tokens[:1] == (START,)
        result = diagnose(
            inp, known, "none" if opened else role, strict=strict, open_stream=piece.elided
        )
        if any(_a_finding(f.code, f.severity, piece) for f in result.findings):
            return result
    return None


def _a_finding(code: str, severity: str, piece: Piece) -> bool:
    """Whether what a quoted piece's replay found is a finding of the paste: an error, anything
    in token ids (a model's own), or a warning of a shape only a model writes (HD202's)."""
    from harmony_doctor.faults.rules import RULES

    return severity == "error" or piece.kind == "ids" or RULES[code].model_only


def _loader(vocab: Vocab | Path | None) -> Callable[[], Vocab]:
    """The vocabulary given, or a loader of the one at the path given (None: the bundled copy),
    for the moment one is needed: a log without token ids never loads one."""

    def loaded() -> Vocab:
        if vocab is None or isinstance(vocab, Path):
            from harmony_doctor.harmony.vocab import load_vocab

            return load_vocab(vocab)
        return vocab

    return loaded


def explain_text(
    text: str,
    vocab: Vocab | None = None,
    *,
    input_format: InputFormat = "auto",
    request: str | None = None,
    role: ParseRole = "assistant",
    strict: bool = True,
    open_stream: bool = False,
) -> LogExplanation | Diagnosis:
    """What `harmony-doctor explain` reports for a text: a log's failures or a diagnosis
    (`explain_input` for a text that was never wrapped, without the grammar check).

    `vocab` is loaded (the bundled, verified copy) only when the text is a token stream and
    none is given.
    """
    from harmony_doctor.inputs.reader import TextInput

    explained = explain_input(
        TextInput(text, "<text>"),
        vocab,
        input_format=input_format,
        request=request,
        role=role,
        strict=strict,
        open_stream=open_stream,
    )
    if isinstance(explained, ExplainedLog):
        return explained.explanation
    return explained.diagnosis


def explain_log(
    text: str,
    found: tuple[LogError, ...],
    vocab: Callable[[], Vocab],
    role: ParseRole = "assistant",
    strict: bool = True,
    open_stream: bool = False,
) -> LogExplanation:
    """A log's failures, with the completions it carries as token ids replayed (as scan does);
    `vocab` is called only when there are completions to replay."""
    from harmony_doctor.evidence import combine

    found = combine.prompt_parsed(found, text, vocab)
    completions: tuple[Diagnosis, ...] = ()
    logged: list[TokenInput] = []
    if _OUTPUT_IDS.search(text):  # vLLM's reader loads for a log that logged ids only
        from harmony_doctor.inputs.vllm_requests import logged_completions

        logged = logged_completions(text)
    if logged:
        from harmony_doctor.streams.diagnose import diagnose

        known = vocab().ready_to_judge()
        completions = tuple(
            diagnose(one_completion(inp), known, role, strict=strict, open_stream=open_stream)
            for inp in logged
        )
    elif not found:  # ids an engine printed under its own key, or none
        pieces = combine.id_pieces(text)
        first = next(pieces, None)  # the vocabulary is loaded only for ids to replay
        failing = (
            None
            if first is None
            else _first_failing(chain((first,), pieces), vocab(), role, strict)
        )
        completions = () if failing is None else (failing,)
    related = bool(found or completions) or mentions_harmony(text)
    described = None if found or completions else combine.description(text)
    return LogExplanation(
        found, count_lines(text), completions, related or described is not None, None, described
    )
