"""harmony-doctor: an offline doctor for gpt-oss Harmony format failures, as a library.

A dozen verbs, each what one command does, and the frozen records they return. None of them
prints or exits; input they cannot read raises a `DoctorError` subclass (`InputError`,
`VocabError`). Importing the package is cheap: the vocabulary, tiktoken, openai-harmony and
polars load only when a verb needs them, and the CLI's typer and rich are never imported.

    import harmony_doctor as hd

    explained = hd.explain(hd.read_input("samples/vllm-traceback.log"))
    result = hd.scan(["samples/"])
    hd.write_events(result, "events.parquet")
    print(hd.report(["events.parquet"]).summary.table)

The steps these verbs are built from (listing inputs, one file at a time for Ray or Dask,
polars frames, watch's loop and metrics, the names of the first releases) are in
`harmony_doctor.advanced`. The `harmony-doctor` command is a thin layer over both: it parses
options, calls them and renders what they return, so an input gives the same findings here.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

from harmony_doctor.choices import ParseRole
from harmony_doctor.errors import DoctorError, InputError, VocabError
from harmony_doctor.version import __version__

if TYPE_CHECKING:
    import polars as pl

    from harmony_doctor.choices import ContentType, Dialect, InputFormat, Style
    from harmony_doctor.explain import ExplainedLog, ExplainedStream, LogExplanation
    from harmony_doctor.faults.rules import Rule
    from harmony_doctor.harmony.vocab import Vocab
    from harmony_doctor.inputs.reader import TextInput
    from harmony_doctor.models import (
        Diagnosis,
        Finding,
        LogError,
        Recovery,
        RenderedPrompt,
        ScanEvent,
        Shrink,
        TokenInput,
    )
    from harmony_doctor.scan.records import FileScan, ScanOptions, ScanResult
    from harmony_doctor.scan.reports import EventFilesSummary
    from harmony_doctor.scan.service import Summary

__all__ = [
    "Diagnosis",
    "DoctorError",
    "EventFilesSummary",
    "ExplainedLog",
    "ExplainedStream",
    "FileScan",
    "Finding",
    "InputError",
    "LogError",
    "LogExplanation",
    "Recovery",
    "RenderedPrompt",
    "Rule",
    "ScanEvent",
    "ScanOptions",
    "ScanResult",
    "Shrink",
    "Summary",
    "TextInput",
    "TokenInput",
    "Vocab",
    "VocabError",
    "__version__",
    "decode",
    "explain",
    "extract_failures",
    "grammar",
    "load_vocab",
    "parse_tokens",
    "read_events",
    "read_input",
    "recover",
    "render",
    "report",
    "repro",
    "rules",
    "scan",
    "write_events",
]

# What the library does, one verb a job (tests/test_api.py holds __all__ to these and the records).
VERBS = (
    "load_vocab",
    "read_input",
    "parse_tokens",
    "explain",
    "extract_failures",
    "scan",
    "report",
    "write_events",
    "read_events",
    "decode",
    "recover",
    "repro",
    "render",
    "grammar",
    "rules",
)


class _Package(types.ModuleType):
    """This package's module. `explain` and `scan` are verbs here and packages below
    (harmony_doctor/explain.py, harmony_doctor/scan/): importing those binds them onto the
    package, which would replace the verb; the verb stays, and the package is reached by its
    dotted name (`from harmony_doctor.scan.records import ScanResult`, importlib)."""

    def __setattr__(self, name: str, value: object) -> None:
        if name in VERBS and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def load_vocab(path: Path | None = None) -> Vocab:
    """The o200k_harmony vocabulary: the bundled copy (SHA-256 checked) or the file given
    (an o200k_base.tiktoken file, or the folder holding one); loaded once per process."""
    from harmony_doctor import advanced

    return advanced.load_vocab(path)


def read_input(source: str | Path = "-") -> TextInput:
    """One input read whole, as every command that takes one input reads it: a path, or `-`
    for standard input; decompressed (gzip, bzip2, xz, zstd), decoded, and unwrapped from
    Docker, CRI, journald or Loki lines. InputError past 32 MiB or for a folder. Data that is
    not text in the input's encoding (binary, UTF-16 inside UTF-8...) is said in `not_text`."""
    from harmony_doctor import advanced

    return advanced.read_input(source)


def parse_tokens(
    text: str,
    vocab: Vocab | None = None,
    *,
    input_format: InputFormat = "auto",
    request: str | None = None,
) -> TokenInput:
    """Token ids in any shape `explain` reads (JSON arrays, lists, JSON/JSONL/SSE documents,
    vLLM request logs, Harmony text); `request` picks one stream of several. InputError for
    ids out of range, text that holds none, or a stream longer than one gpt-oss context."""
    from harmony_doctor import advanced

    return advanced.parse_tokens(text, vocab, input_format=input_format, request=request)


def explain(
    source: TextInput | TokenInput | Sequence[int] | str,
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
    """What `harmony-doctor explain` reports: a log's failures (`ExplainedLog`) or a token
    stream's diagnosis (`ExplainedStream`, openai-harmony's verdict with where and why).

    `source` is an input read by `read_input` (failures placed on the lines as given), a text
    (`str`: the text itself, never a path), or token ids (`TokenInput` or a sequence of ints).
    With `check_grammar` (or a Lark `grammar_file`), the guided-decoding grammar's verdict too.
    The vocabulary is loaded only when a stream is judged."""
    from harmony_doctor import advanced
    from harmony_doctor.explain import ExplainedStream
    from harmony_doctor.inputs.reader import TextInput
    from harmony_doctor.models import TokenInput

    if isinstance(source, str):
        source = TextInput(source, "<text>")
    if isinstance(source, TextInput):
        return advanced.explain_input(
            source,
            vocab,
            input_format=input_format,
            request=request,
            role=role,
            strict=strict,
            open_stream=open_stream,
            check_grammar=check_grammar,
            grammar_file=grammar_file,
        )
    if check_grammar or grammar_file is not None:
        raise InputError("the grammar check reads an input: pass read_input(...) or its text")
    tokens = source if isinstance(source, TokenInput) else list(source)
    loaded = load_vocab(vocab) if vocab is None or isinstance(vocab, Path) else vocab
    diagnosis = advanced.explain_tokens(
        tokens, loaded, role=role, strict=strict, open_stream=open_stream
    )
    return ExplainedStream(diagnosis)


def extract_failures(text: str) -> tuple[LogError, ...]:
    """Every Harmony failure a log excerpt, traceback or error body records, once each."""
    from harmony_doctor import advanced

    return advanced.extract_failures(text)


def scan(
    paths: Sequence[str | Path],
    options: ScanOptions | None = None,
    *,
    globs: Sequence[str] = (),
    excludes: Sequence[str] = (),
) -> ScanResult:
    """What `harmony-doctor scan` reads: log files, folders (recursive), compressed and
    wrapped logs, and URLs with the remote extra; a ScanResult of events, request tallies and
    one report per file (unreadable ones included, with their reason). `report(result)` gives
    the table scan prints; `write_events` keeps the events for `report` elsewhere."""
    from harmony_doctor import advanced

    return advanced.scan_paths(paths, options, globs=globs, excludes=excludes)


@overload
def report(source: ScanResult, by: Sequence[str] = ...) -> Summary: ...
@overload
def report(source: Sequence[str | Path], by: Sequence[str] = ...) -> EventFilesSummary: ...
def report(
    source: ScanResult | Sequence[str | Path], by: Sequence[str] = ("code",)
) -> Summary | EventFilesSummary:
    """The summary `scan` and `report` print, grouped `by` (`code`, `day`, `origin`, ...):
    of a ScanResult (a `Summary`: table, totals, days, files), or of event files written by
    `write_events` or `scan --events` (an `EventFilesSummary`: the same `Summary`, and the
    files that could not be read set apart). InputError for a key it cannot group by."""
    from harmony_doctor import advanced
    from harmony_doctor.scan.records import ScanResult

    if isinstance(source, ScanResult):
        return advanced.summarize_scan(source, by)
    return advanced.summarize_event_files(source, by)


def write_events(result: ScanResult | FileScan, path: str | Path) -> Path:
    """A scan's events written as `scan --events PATH` writes them (CSV, JSONL or Parquet, by
    the extension), with the request tallies beside them (`events.requests.parquet`), both
    renamed into place when complete; returns the tallies' path. `read_events` and `report`
    read them back."""
    from harmony_doctor import advanced
    from harmony_doctor.output.tables import write_events as write
    from harmony_doctor.scan.records import FileScan

    whole = advanced.merge([result]) if isinstance(result, FileScan) else result
    events = Path(path)
    tallies = advanced.requests_path(events)
    write(advanced.scan_events(whole), advanced.tally_table(whole), events, tallies)
    return tallies


def read_events(paths: Sequence[str | Path]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Event files written by `write_events` or `scan --events` (any mix of CSV, JSONL and
    Parquet) as the events and request tallies frames `advanced.frames` gives for the scan
    that wrote them (the same columns and types; a row repeated across files counted once).
    InputError for the first file that cannot be read or is no events file."""
    from harmony_doctor.scan.event_files import read_event_files
    from harmony_doctor.scan.summary import events_frame, requests_frame, requests_view

    read = read_event_files(
        [Path(p) for p in paths], events_frame(()).schema, requests_frame(()).schema
    )
    if read.bad:
        raise InputError(read.bad[0].reason)
    tallies = requests_view(read.tallies) if read.tallies is not None else requests_frame(())
    return read.frame, tallies


def decode(tokens: TokenInput | Sequence[int] | str, vocab: Vocab | None = None) -> str:
    """The text token ids stand for, special tokens as their `<|name|>` strings (a `str` is
    read by `parse_tokens` first); bytes that are not UTF-8 become U+FFFD, as openai-harmony
    decodes them."""
    from harmony_doctor.models import TokenInput

    loaded = vocab if vocab is not None else load_vocab()
    if isinstance(tokens, str):
        tokens = parse_tokens(tokens, loaded)
    ids = tokens.tokens if isinstance(tokens, TokenInput) else tokens
    return loaded.decode(list(ids))


def recover(
    tokens: TokenInput | Sequence[int], vocab: Vocab | None = None, *, role: ParseRole = "assistant"
) -> Recovery:
    """What strict and lenient openai-harmony return for a stream, and a salvage of every
    message with how it was obtained (`certain` or `guessed`) and its token span."""
    from harmony_doctor import advanced

    return advanced.recover(tokens, vocab, role=role)


def repro(
    tokens: TokenInput | Sequence[int],
    folder: Path | None = None,
    vocab: Vocab | None = None,
    *,
    role: ParseRole = "assistant",
    strict: bool = True,
    budget: int = 20_000,
    copy_vocab: bool = True,
    overwrite: bool = False,
) -> Shrink:
    """The smallest stream that fails the same way under openai-harmony (delta debugging);
    with `folder`, a repro bundle written there too (tokens.json, an offline repro.py,
    versions.json, ISSUE.md). OutputError before the shrink when `folder` holds bundle files
    already, unless `overwrite` (which still never replaces a file it did not write)."""
    from harmony_doctor import advanced

    if folder is not None:
        advanced.check_repro_folder(folder, copy_vocab=copy_vocab, overwrite=overwrite)
    source = tokens if not isinstance(tokens, Sequence) else None
    result = advanced.shrink(tokens, vocab, role=role, strict=strict, budget=budget)
    if folder is not None:
        advanced.write_repro(
            result, folder, vocab, source=source, copy_vocab=copy_vocab, overwrite=overwrite
        )
    return result


def render(
    chat: dict[str, Any] | str,
    vocab: Vocab | None = None,
    *,
    style: Style = "harmony",
    date: str | None = None,
    keep_analysis: bool = False,
) -> RenderedPrompt:
    """The Harmony prompt openai-harmony renders for an OpenAI-style chat request (a dict, or
    its JSON text), with warnings for the multi-turn pitfalls."""
    from harmony_doctor import advanced

    return advanced.render_chat(chat, vocab, style=style, date=date, keep_analysis=keep_analysis)


def grammar(
    dialect: Dialect = "lark",
    *,
    channels: Sequence[str] | None = None,
    tools: Sequence[str] | None = None,
    tools_from: str | Path | None = None,
    content_types: Sequence[ContentType] | None = None,
    require_return: bool = False,
    require_call: bool = False,
) -> str:
    """A guided-decoding grammar for a whole completion (llguidance Lark or GBNF); `tools` and
    the tools of the chat request in `tools_from` are the recipients allowed (any, with
    neither). `advanced.validate_grammar` compiles one with llguidance."""
    from harmony_doctor import advanced

    return advanced.grammar_text(
        dialect,
        channels=channels,
        tools=tools,
        tools_from=tools_from,
        content_types=content_types,
        require_return=require_return,
        require_call=require_call,
    )


def rules(code: str | None = None) -> tuple[Rule, ...]:
    """The diagnosis catalogue in code order: every code with its kind, severity, title, cause,
    fix and references; with `code` (`HD101`, ` hd205 `), that rule alone, or () if none."""
    from harmony_doctor import advanced

    if code is None:
        return advanced.list_rules()
    found = advanced.find_rule(code)
    return () if found is None else (found,)


# The records, from their own modules on first use (PEP 562): `--help` needs none of them.
_RECORDS = {
    **dict.fromkeys(
        ("Diagnosis", "Finding", "LogError", "Recovery", "RenderedPrompt", "ScanEvent", "Shrink"),
        "harmony_doctor.models",
    ),
    "TokenInput": "harmony_doctor.models",
    **dict.fromkeys(
        ("ExplainedLog", "ExplainedStream", "LogExplanation"), "harmony_doctor.explain"
    ),
    "Rule": "harmony_doctor.faults.rules",
    "TextInput": "harmony_doctor.inputs.reader",
    "Vocab": "harmony_doctor.harmony.vocab",
    **dict.fromkeys(("FileScan", "ScanOptions", "ScanResult"), "harmony_doctor.scan.records"),
    "EventFilesSummary": "harmony_doctor.scan.reports",
    "Summary": "harmony_doctor.scan.service",
}


def __getattr__(name: str) -> Any:
    import importlib

    if name in _RECORDS:
        return getattr(importlib.import_module(_RECORDS[name]), name)
    # The names the first releases exported here (`explain_tokens`, `scan_paths`, ...) still
    # answer, from harmony_doctor.advanced, though __all__ no longer lists them.
    advanced = importlib.import_module("harmony_doctor.advanced")
    if name in advanced.__all__:
        return getattr(advanced, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
