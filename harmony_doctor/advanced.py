"""The rest of the library: every function and record behind the dozen verbs of
`harmony_doctor`, for engines and tools that need a step on its own.

`harmony_doctor` lists the verbs most callers need (`explain`, `scan`, `report`,
`read_events`, `write_events`, `decode`, `recover`, `repro`, `render`, `grammar`, `rules`, ...)
and the records they return. This module holds the steps they are built from: listing inputs
and scanning them with progress and a spill directory (`list_inputs`, `scan_inputs`,
`spill_directory`), one file or one stream at a time for process pools, Ray or Dask
(`scan_file`, `scan_rotated`, `scan_stream`, `merge`), the polars frames and summaries
(`frames`, `summarize`, `summarize_scan`, `scan_events`), the repro steps (`shrink`,
`write_repro`, `check_repro_folder`), `watch`'s loop and metrics (`Watcher`, `metrics_registry`,
`MetricsServer`, `alert_rules`), and the names the first releases exported at the top level
(`explain_tokens`, `explain_text`, `explain_input`, `scan_paths`, `render_chat`,
`grammar_text`, `list_rules`, ...), which keep working from here. Like the top level, nothing
here prints or exits, and importing it loads no heavy library.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from harmony_doctor.choices import ParseRole
from harmony_doctor.errors import DoctorError, InputError, VocabError
from harmony_doctor.version import __version__

if TYPE_CHECKING:
    import polars as pl

    from harmony_doctor.choices import ContentType, Dialect, InputFormat, Style
    from harmony_doctor.explain import (
        ExplainedLog,
        ExplainedStream,
        LogExplanation,
        explain_input,
        explain_text,
    )
    from harmony_doctor.faults.rules import Rule
    from harmony_doctor.harmony.vocab import Vocab
    from harmony_doctor.inputs.reader import TextInput
    from harmony_doctor.models import (
        Diagnosis,
        Finding,
        LogError,
        Received,
        Recovery,
        RenderedPrompt,
        ScanEvent,
        Shrink,
        TokenInput,
    )
    from harmony_doctor.scan.records import FileReport, FileScan, ScanOptions, ScanResult
    from harmony_doctor.scan.reports import EventFilesSummary, UnreadFile, summarize_event_files
    from harmony_doctor.scan.service import (
        EventFrames,
        InputListing,
        ScanProgress,
        Summary,
        list_inputs,
        scan_events,
        scan_inputs,
        spill_directory,
        summarize_scan,
    )
    from harmony_doctor.streams.guided import LogCheck, StreamCheck
    from harmony_doctor.watch.metrics import (
        MetricsServer,
        metrics_registry,
        write_metrics_textfile,
    )
    from harmony_doctor.watch.rules import AlertOptions, alert_rules
    from harmony_doctor.watch.run import Watcher, WatchOptions

__all__ = [
    "AlertOptions",
    "Diagnosis",
    "DoctorError",
    "EventFilesSummary",
    "EventFrames",
    "ExplainedLog",
    "ExplainedStream",
    "FileReport",
    "FileScan",
    "Finding",
    "InputError",
    "InputListing",
    "LogCheck",
    "LogError",
    "LogExplanation",
    "MetricsServer",
    "Received",
    "Recovery",
    "RenderedPrompt",
    "Rule",
    "ScanEvent",
    "ScanOptions",
    "ScanProgress",
    "ScanResult",
    "Shrink",
    "StreamCheck",
    "Summary",
    "TextInput",
    "TokenInput",
    "UnreadFile",
    "Vocab",
    "VocabError",
    "WatchOptions",
    "Watcher",
    "__version__",
    "alert_rules",
    "check_repro_folder",
    "empty_frames",
    "existing_repro_files",
    "explain_input",
    "explain_text",
    "explain_tokens",
    "extract_failures",
    "find_rule",
    "frames",
    "grammar_text",
    "group_keys",
    "list_inputs",
    "list_rules",
    "load_vocab",
    "merge",
    "metrics_registry",
    "parse_tokens",
    "read_input",
    "read_text",
    "received",
    "recover",
    "render_chat",
    "requests_path",
    "scan_core",
    "scan_events",
    "scan_file",
    "scan_inputs",
    "scan_paths",
    "scan_rotated",
    "scan_stream",
    "shrink",
    "spill_directory",
    "summarize",
    "summarize_event_files",
    "summarize_scan",
    "tally_table",
    "validate_grammar",
    "write_metrics_textfile",
    "write_repro",
]


def load_vocab(path: Path | None = None) -> Vocab:
    """The o200k_harmony vocabulary: the bundled copy (SHA-256 checked) or the file given
    (an o200k_base.tiktoken file, or the folder holding one); loaded once per process."""
    from harmony_doctor.harmony.vocab import load_vocab as load

    return load(path)


def read_input(source: str | Path = "-") -> TextInput:
    """One input read whole, as every command that takes one input reads it: a path, or `-`
    for standard input; decompressed (gzip, bzip2, xz, zstd), decoded, and unwrapped from
    Docker, CRI, journald or Loki lines, with what the wrapper said of each line (for
    `explain_input` to place failures in the input as given). InputError past 32 MiB. Data
    that is not text in the input's encoding is said in `not_text` (the input was not read
    whole)."""
    from harmony_doctor.inputs.reader import read_input as read

    return read(str(source))


def read_text(source: str | Path = "-") -> tuple[str, str]:
    """`read_input`'s text and label (the path, or `<stdin>`) alone; InputError when part of
    the input is not text (`not_text`): a token command reads its input whole or not at all."""
    from harmony_doctor.inputs.reader import read_text as read

    return read(str(source))


def parse_tokens(
    text: str,
    vocab: Vocab | None = None,
    *,
    input_format: InputFormat = "auto",
    request: str | None = None,
) -> TokenInput:
    """Token ids in any shape `explain` reads (JSON, lists, vLLM logs, Harmony text); a stream
    longer than one gpt-oss context is refused (InputError), a plain list before it is parsed."""
    from harmony_doctor.inputs.lengths import one_completion, refuse_long_lists
    from harmony_doctor.inputs.tokens import parse_tokens as parse

    refuse_long_lists(text)
    return one_completion(parse(text, _vocab(vocab).encode, input_format, request))


def explain_tokens(
    tokens: TokenInput | Sequence[int],
    vocab: Vocab | None = None,
    *,
    role: ParseRole = "assistant",
    strict: bool = True,
    open_stream: bool = False,
) -> Diagnosis:
    """openai-harmony's verdict on a stream, with where it went wrong, why, and the fix."""
    from harmony_doctor.streams.diagnose import diagnose

    inp = _token_input(tokens)
    judge = _vocab(vocab).ready_to_judge()
    return diagnose(inp, judge, role, strict=strict, open_stream=open_stream)


def extract_failures(text: str) -> tuple[LogError, ...]:
    """Every Harmony failure a log excerpt, traceback or error body records, once each."""
    from harmony_doctor.logs import extract_text

    return extract_text(text)


def recover(
    tokens: TokenInput | Sequence[int], vocab: Vocab | None = None, *, role: ParseRole = "assistant"
) -> Recovery:
    """What strict and lenient openai-harmony return, and a salvage with its provenance."""
    from harmony_doctor.streams.recover import recover as salvage

    return salvage(_token_input(tokens), _vocab(vocab).ready_to_judge(), role)


def received(messages: Sequence[dict[str, Any]]) -> Received:
    """What a client gets from openai-harmony's messages (a Recovery's `strict.messages` or
    `lenient.messages`): the reasoning, the final answer and the last tool call."""
    from harmony_doctor.streams.recover import received as as_received

    return as_received(messages)


def shrink(
    tokens: TokenInput | Sequence[int],
    vocab: Vocab | None = None,
    *,
    role: ParseRole = "assistant",
    strict: bool = True,
    budget: int = 20_000,
) -> Shrink:
    """The smallest stream that fails the same way (delta debugging under openai-harmony)."""
    from harmony_doctor.streams.repro import shrink as ddmin

    inp = _token_input(tokens)
    judge = _vocab(vocab).ready_to_judge()
    return ddmin(inp.tokens, judge, role, strict=strict, budget=budget)


def write_repro(
    result: Shrink,
    folder: Path,
    vocab: Vocab | None = None,
    *,
    label: str = "<api>",
    source: TokenInput | None = None,
    copy_vocab: bool = True,
    overwrite: bool = False,
) -> list[Path]:
    """Write tokens.json, an offline repro.py, versions.json and ISSUE.md into `folder` (and
    vocab/, with `copy_vocab`). OutputError, and nothing written, when some of those files are
    there already, unless `overwrite`."""
    from harmony_doctor.output.escape import visible
    from harmony_doctor.streams.repro import write_bundle

    original = source if source is not None else _token_input(result.original)
    inputs = [Path(label)] if label not in ("<api>", "<stdin>", "-") else []
    return write_bundle(
        result,
        folder,
        _vocab(vocab),
        label,
        original,
        copy_vocab=copy_vocab,
        overwrite=overwrite,
        shown=visible,
        inputs=inputs,
    )


def check_repro_folder(
    folder: Path,
    *,
    copy_vocab: bool = True,
    overwrite: bool = False,
    inputs: Sequence[Path] = (),
) -> None:
    """OutputError when `write_repro` would refuse `folder` (`existing_repro_files`), said as
    it would say it: to ask before the shrink, which may take a while."""
    from harmony_doctor.streams.repro import check_bundle_folder

    check_bundle_folder(folder, copy_vocab, overwrite, inputs)


def existing_repro_files(
    folder: Path,
    *,
    copy_vocab: bool = True,
    overwrite: bool = False,
    inputs: Sequence[Path] = (),
) -> list[Path]:
    """The files of a repro bundle already in `folder`, which `write_repro` would replace (to
    ask before the shrink, which may take a while); with `overwrite`, those it refuses to
    replace even then: one of `inputs`, or a file it did not write."""
    from harmony_doctor.streams.repro import existing_bundle_files

    return existing_bundle_files(folder, copy_vocab, overwrite, inputs)


def render_chat(
    chat: dict[str, Any] | str,
    vocab: Vocab | None = None,
    *,
    style: Style = "harmony",
    date: str | None = None,
    keep_analysis: bool = False,
) -> RenderedPrompt:
    """The Harmony prompt openai-harmony renders for an OpenAI-style chat request."""
    from harmony_doctor.streams import render

    request = render.load_chat(chat) if isinstance(chat, str) else chat
    return render.render_chat(request, _vocab(vocab), style, date, keep_analysis)


def grammar_text(
    dialect: Dialect = "lark",
    *,
    channels: Sequence[str] | None = None,
    tools: Sequence[str] | None = None,
    tools_from: str | Path | None = None,
    content_types: Sequence[ContentType] | None = None,
    require_return: bool = False,
    require_call: bool = False,
) -> str:
    """A guided-decoding grammar for a whole completion (llguidance Lark or GBNF).

    `tools` (NAME means functions.NAME; dotted names as written) and the `tools` of the chat
    request in the file `tools_from` are the recipients allowed; with neither, any name is.
    An empty `content_types` allows no content type at all. InputError for a tool name no
    header can hold, or a `tools_from` file that is not a chat request or a list of tools."""
    from harmony_doctor.streams import grammar

    declared = None
    if tools or tools_from is not None:
        names = [grammar.recipient_for(t) for t in tools or ()]
        if tools_from is not None:
            names += grammar.tools_from_request(*read_text(tools_from))
        declared = grammar.narrow_tools(names)
    defaults = grammar.GrammarOptions()
    options = grammar.GrammarOptions(
        channels=tuple(channels) if channels is not None else defaults.channels,
        tools=declared,
        content_types=tuple(content_types) if content_types is not None else defaults.content_types,
        require_return=require_return,
        require_call=require_call,
    )
    return grammar.emit(options, dialect, __version__)


def validate_grammar(text: str, dialect: Dialect, vocab: Vocab | Path | None = None) -> None:
    """Compile a grammar with llguidance over the vocabulary (a Vocab, the path of one, or the
    bundled copy), GBNF through llguidance's converter; GrammarEngineError if it is refused."""
    from harmony_doctor.streams.grammar import validate

    validate(text, dialect, _vocab(vocab))


def list_rules() -> tuple[Rule, ...]:
    """The diagnosis catalogue: every code with its kind, severity, title, cause and fix, in
    code order."""
    from harmony_doctor.faults.rules import RULES

    return tuple(sorted(RULES.values(), key=lambda rule: rule.code))


def find_rule(code: str) -> Rule | None:
    """One rule of the catalogue by its code (`HD101`, ` hd205 `: case and spaces do not
    matter); None when no rule has that code."""
    from harmony_doctor.faults.rules import RULES

    return RULES.get(code.strip().upper())


def scan_core() -> str:
    """`native` or `python`: the scan core this process runs (the Rust extension when it was
    built at install time and works, else the Python reference)."""
    from harmony_doctor.native import core_name

    return core_name()


def scan_paths(
    paths: Sequence[str | Path],
    options: ScanOptions | None = None,
    *,
    globs: Sequence[str] = (),
    excludes: Sequence[str] = (),
) -> ScanResult:
    """Scan log files and folders (recursive, compressed, wrapped); unreadable ones are reported.
    (`list_inputs` then `scan_inputs`, which can also report progress.)"""
    from harmony_doctor.scan.service import list_inputs, scan_inputs

    return scan_inputs(list_inputs(paths, globs, excludes), options)


def scan_file(path_or_url: str | Path, options: ScanOptions | None = None) -> FileScan:
    """One log file (compressed or not; a URL once the remote extra is installed) scanned in
    this process: its events, request tallies and report, picklable, for Ray tasks, Dask
    futures or a process pool to map over a listing and hand to `merge`. `options.jobs` is
    ignored (one file, one process); `options.origin` defaults to this machine's host name."""
    from harmony_doctor.scan.records import ScanOptions
    from harmony_doctor.scan.run import scan_file as scan_one

    return scan_one(path_or_url, options or ScanOptions())


def scan_rotated(
    paths: Sequence[str | Path], options: ScanOptions | None = None
) -> tuple[FileScan, ...]:
    """The parts of one rotated log (`vllm.log.2.gz`, `vllm.log.1`, `vllm.log`; any order) read
    oldest first as one stream, as `scan` reads them: one FileScan per part, and a failure the
    rotation cut in two counted once. Map it over `list_inputs(...).streams` (a lone file or
    URL is a stream of one) and `merge` the results: one scan over the same inputs."""
    from harmony_doctor.scan.records import ScanOptions
    from harmony_doctor.scan.run import scan_file as scan_one
    from harmony_doctor.scan.run import scan_rotated as scan_parts

    if len(paths) == 1:
        return (scan_one(paths[0], options or ScanOptions()),)
    return scan_parts(paths, options or ScanOptions())


def scan_stream(
    stream: IO[bytes],
    label: str = "<stream>",
    options: ScanOptions | None = None,
    *,
    reference: datetime | None = None,
) -> FileScan:
    """An open binary stream scanned as `scan_file` scans a file (same FileScan shape);
    `reference` dates log stamps that have no year (default: now)."""
    from harmony_doctor.scan.records import ScanOptions
    from harmony_doctor.scan.run import scan_stream as scan_one

    return scan_one(stream, label, options or ScanOptions(), reference)


def merge(file_scans: Iterable[FileScan]) -> ScanResult:
    """FileScans from `scan_file`/`scan_stream` (any process, any order) as one ScanResult, which
    `summarize` turns into the table one `scan` over the same files prints."""
    from harmony_doctor.scan.run import merge as combine

    return combine(file_scans)


def frames(result: ScanResult | FileScan) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Events and request tallies as polars frames with a fixed schema, whatever they hold
    (the same dtypes for an empty scan): see README "Fleet" for the columns."""
    from harmony_doctor.scan.summary import events_frame, requests_frame

    return events_frame(result.events), requests_frame(result.requests)


def empty_frames() -> tuple[pl.DataFrame, pl.DataFrame]:
    """An events frame and a tallies frame with every column, typed, and no rows."""
    from harmony_doctor.scan.summary import empty_frames as empty

    return empty()


def summarize(result: ScanResult | FileScan, by: Sequence[str] = ("code",)) -> pl.DataFrame:
    """The grouped table `scan` prints: count, share, requests, rate, first/last seen, example
    (`summarize_scan` gives it with the totals and days too)."""
    from harmony_doctor.scan.summary import group_keys
    from harmony_doctor.scan.summary import summarize as group

    return group(result, group_keys(by))


def group_keys(by: Sequence[str]) -> tuple[str, ...]:
    """`--by` values (comma-separated or repeated) as group keys, each once; `code` when none
    are given. InputError for a key summaries cannot group by."""
    from harmony_doctor.scan.summary import group_keys as keys

    return keys(by)


def requests_path(events: Path) -> Path:
    """Where the request tallies of an events file go (`scan --events`) and are looked for
    (`report`): the same name with `.requests` before the extension."""
    from harmony_doctor.scan.event_files import requests_path as beside

    return beside(events)


def tally_table(result: ScanResult | FileScan) -> pl.DataFrame:
    """The request tallies as `scan --events` writes them beside the events (file, pid, server,
    hour, count, origin; nothing derived), for `report` to read back."""
    from harmony_doctor.scan.summary import tally_table as table

    return table(result.requests)


# Names of the API defined in their own modules, imported on first use (PEP 562).
_LAZY = {
    # watch: logs followed live, their failures counted for Prometheus
    **dict.fromkeys(("Watcher", "WatchOptions"), "harmony_doctor.watch.run"),
    **dict.fromkeys(("AlertOptions", "alert_rules"), "harmony_doctor.watch.rules"),
    **dict.fromkeys(
        ("MetricsServer", "metrics_registry", "write_metrics_textfile"),
        "harmony_doctor.watch.metrics",
    ),
    **dict.fromkeys(
        (
            "Diagnosis",
            "Finding",
            "LogError",
            "Received",
            "Recovery",
            "RenderedPrompt",
            "ScanEvent",
            "Shrink",
            "TokenInput",
        ),
        "harmony_doctor.models",  # the records, built on first use: `--help` needs none
    ),
    # what `explain` reports for an input read whole, or for any text
    **dict.fromkeys(
        ("explain_input", "explain_text", "ExplainedLog", "ExplainedStream", "LogExplanation"),
        "harmony_doctor.explain",
    ),
    "LogCheck": "harmony_doctor.streams.guided",
    "StreamCheck": "harmony_doctor.streams.guided",
    "Rule": "harmony_doctor.faults.rules",
    "TextInput": "harmony_doctor.inputs.reader",
    "Vocab": "harmony_doctor.harmony.vocab",
    **dict.fromkeys(
        ("ScanOptions", "FileReport", "FileScan", "ScanResult"), "harmony_doctor.scan.records"
    ),
    # inputs listed, a scan with progress, and the one summary scan and report print
    **dict.fromkeys(
        (
            "EventFrames",
            "InputListing",
            "ScanProgress",
            "Summary",
            "list_inputs",
            "scan_events",
            "scan_inputs",
            "spill_directory",
            "summarize_scan",
        ),
        "harmony_doctor.scan.service",
    ),
    **dict.fromkeys(
        ("EventFilesSummary", "UnreadFile", "summarize_event_files"), "harmony_doctor.scan.reports"
    ),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _vocab(vocab: Vocab | Path | None) -> Vocab:
    """The vocabulary given, or loaded from the path given (None: the bundled copy)."""
    return load_vocab(vocab) if vocab is None or isinstance(vocab, Path) else vocab


def _token_input(tokens: TokenInput | Sequence[int]) -> TokenInput:
    from harmony_doctor.models import TokenInput

    if isinstance(tokens, TokenInput):
        return tokens
    return TokenInput(tuple(int(t) for t in tokens), "tokens", "api")
