"""Any input -> what `explain` reports: the failures a log records, or the diagnosis of a stream.

The decision between the two is made here, once, for the library and the command line alike
(`explain_input`; the CLI only renders what it returns): a text that holds Harmony failures and
no token stream to replay is a log; anything else is read as token ids (or Harmony text) and
diagnosed. Either may be checked against the guided-decoding grammar.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from harmony_doctor.choices import InputFormat, ParseRole
from harmony_doctor.errors import InputError
from harmony_doctor.inputs import tokens as token_input
from harmony_doctor.models import Diagnosis, LogError

if TYPE_CHECKING:
    from harmony_doctor.harmony.vocab import Vocab
    from harmony_doctor.inputs.reader import TextInput
    from harmony_doctor.streams.guided import LogCheck, StreamCheck

_OUTPUT_IDS = re.compile(r"\boutput_token_ids\s*[:=]\s*\[")


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
_RELATED = re.compile(
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


def log_failures(
    text: str, input_format: InputFormat = "auto", request: str | None = None
) -> tuple[LogError, ...] | None:
    """The failures in a log excerpt, or None when the input is a token stream to replay."""
    # The log readers (many regexes) load only for a text that may be a log, never for ids.
    body = text.lstrip("\ufeff")
    if input_format == "log":
        from harmony_doctor import logs

        return logs.extract_text(text)
    if input_format != "auto" or request is not None or not body.strip():
        # A forced shape or a chosen request is token input; the reader reports empty input.
        return None
    try:
        shape = token_input.detect_format(body)
    except InputError:
        from harmony_doctor import logs

        # No tokens at all: whatever the log holds, else Harmony text stripped of its special
        # tokens (vLLM's `output:` field), which cannot be replayed and is not clean.
        found = logs.extract_text(text)
        stripped = None if found else logs.find_stripped(body)
        return (stripped,) if stripped is not None else found
    if shape not in ("text", "json", "jsonl", "vllm-log"):
        return None
    from harmony_doctor import logs

    found = logs.extract_text(text)
    if not found:
        return None
    if shape == "text":
        return found  # special-token strings inside error messages, not a Harmony stream
    if shape == "vllm-log":  # a log with failures: its errors, and its completions replayed
        return found
    try:
        token_input.parse_tokens(body, _no_encode, shape, request)
    except InputError:
        return found  # a JSON error body without token ids
    return None


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
    found = log_failures(text, input_format, request)
    if found is not None:  # a log of errors, not a token stream
        found = place_in_input(found, given)
        log_check = None
        if checking:
            from harmony_doctor.streams.guided import check_log

            log_check = check_log(found, custom=grammar_file is not None)
        explained = explain_log(text, found, loaded, role, strict, open_stream)
        return ExplainedLog(explained, log_check)
    from harmony_doctor.streams.diagnose import diagnose

    known = loaded()
    inp = token_input.parse_tokens(text, known.encode, input_format, request)
    result = diagnose(inp, known.ready_to_judge(), role, strict=strict, open_stream=open_stream)
    stream_check = None
    if checking:
        from harmony_doctor.inputs.reader import read_text
        from harmony_doctor.streams.guided import check_stream

        lark, source = read_text(str(grammar_file)) if grammar_file is not None else (None, "")
        stream_check = check_stream(result, known, lark, source)
    return ExplainedStream(result, stream_check)


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
    completions: tuple[Diagnosis, ...] = ()
    logged = token_input.logged_completions(text) if _OUTPUT_IDS.search(text) else []
    if logged:
        from harmony_doctor.streams.diagnose import diagnose

        known = vocab().ready_to_judge()
        completions = tuple(
            diagnose(inp, known, role, strict=strict, open_stream=open_stream) for inp in logged
        )
    related = bool(found or completions) or mentions_harmony(text)
    return LogExplanation(found, count_lines(text), completions, related)
