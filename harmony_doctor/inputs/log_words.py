"""The words around a log's lines, written once: what the wrappers (Docker's json-file, CRI,
journald, the JSON of log shippers) call their fields, the month names of a syslog stamp, the
level words before a vLLM stamp, and the words of vLLM's `Generated response` line.

The Python readers build their patterns from these (inputs/wrappers.py, inputs/json_records.py,
inputs/timestamps.py, inputs/tokens.py, native.py), and the Rust core is handed them when it is
made (`wrapper_words`, `completion_words`): it holds no log's wording of its own
(tests/test_native_words.py reads its sources for any)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final, TypedDict

# A syslog stamp's months (`Nov 12 10:41:19`), as journalctl -o short writes them.
MONTHS: Final = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")

# vLLM's stamp may follow a level word (`INFO 11-27 10:00:01`); a line's pid follows its key
# (`pid=42`, `pid: 42`).
LEVELS: Final = ("INFO", "ERROR", "WARNING", "DEBUG", "CRITICAL", "WARN")
PID_KEY: Final = "pid"

# CRI: `<time> stdout|stderr P|F <text>`; F marks a whole line, P a piece of one.
CRI_STREAMS: Final = ("stdout", "stderr")
CRI_WHOLE: Final = "F"
CRI_PIECE: Final = "P"

# Docker's json-file: `{"log":"...\n","stream":"stdout","time":"..."}` (its `attrs` with
# --log-opt labels stands where `time` may not).
DOCKER_LOG: Final = "log"
DOCKER_STREAM: Final = "stream"
DOCKER_TIME: Final = "time"
DOCKER_ATTRS: Final = "attrs"

# journalctl -o json: the message, and the keys of which one marks a journal record.
JOURNAL_MESSAGE: Final = "MESSAGE"
JOURNAL_PID: Final = "_PID"
JOURNAL_MARKS: Final = ("__REALTIME_TIMESTAMP", JOURNAL_PID, "__CURSOR")

# A shipper's JSON record (Vector, Promtail, Fluent Bit, logcli): its line under one of these
# fields, told from other JSON by one of the meta keys beside it.
JSON_FIELDS: Final = ("message", "line", "log")
TIME_KEYS: Final = ("time", "timestamp", "@timestamp", "ts", "date", "_timestamp")
META_KEYS: Final = (*TIME_KEYS, "labels", "stream", "host", "hostname", "source_type", "kubernetes")
PID_KEYS: Final = ("pid", JOURNAL_PID)  # the first present is the record's pid

# vLLM's request log (--enable-log-outputs): `Generated response <id>[ (streaming delta|complete)]:
# ... output_token_ids: [...], finish_reason: stop`
VLLM_GENERATED: Final = "Generated response "
VLLM_OUTPUT_KEY: Final = "output_token_ids"
VLLM_FINISH_KEY: Final = "finish_reason"
VLLM_DELTA: Final = " (streaming delta)"
VLLM_COMPLETE: Final = " (streaming complete)"
VLLM_MODES: Final = (VLLM_DELTA, VLLM_COMPLETE)
VLLM_NO_IDS: Final = "None"  # the ids of a line that logs none (Python's repr of None)
VLLM_NO_REASONS: Final = ("None", "streaming_complete")  # finish reasons that are none


def either(words: Iterable[str]) -> str:
    """A regex alternation of `words`, each escaped."""
    return "|".join(map(re.escape, words))


class StampWords(TypedDict):
    """The keyword arguments of a stamp's words (the Rust `Core`, `Wrappers`)."""

    levels: list[str]
    pid_key: str


class WrapperWords(StampWords):
    """The keyword arguments of the Rust `Wrappers` (harmony_doctor/_native.pyi)."""

    months: list[str]
    cri_streams: list[str]
    cri_whole: str
    docker: list[str]
    docker_attrs: str
    journal_message: str
    journal_marks: list[str]
    journal_pid: str
    json_fields: list[str]
    meta_keys: list[str]
    pid_keys: list[str]


class CompletionWords(TypedDict):
    """The keyword arguments of the Rust `Completions` (harmony_doctor/_native.pyi)."""

    generated: str
    output_key: str
    finish_key: str
    modes: list[str]
    no_ids: str
    no_reasons: list[str]


def stamp_words() -> StampWords:
    """The words of a line's stamp and pid, as the Rust `Core` is made with them."""
    return {"levels": list(LEVELS), "pid_key": PID_KEY}


def wrapper_words() -> WrapperWords:
    """The keyword arguments the Rust `Wrappers` is made with (a line's own pid is read with
    the stamp's words)."""
    return {
        **stamp_words(),
        "months": list(MONTHS),
        "cri_streams": list(CRI_STREAMS),
        "cri_whole": CRI_WHOLE,
        "docker": [DOCKER_LOG, DOCKER_STREAM, DOCKER_TIME],
        "docker_attrs": DOCKER_ATTRS,
        "journal_message": JOURNAL_MESSAGE,
        "journal_marks": list(JOURNAL_MARKS),
        "journal_pid": JOURNAL_PID,
        "json_fields": list(JSON_FIELDS),
        "meta_keys": list(META_KEYS),
        "pid_keys": list(PID_KEYS),
    }


def completion_words() -> CompletionWords:
    """The keyword arguments the Rust `Completions` is made with."""
    return {
        "generated": VLLM_GENERATED,
        "output_key": VLLM_OUTPUT_KEY,
        "finish_key": VLLM_FINISH_KEY,
        "modes": list(VLLM_MODES),
        "no_ids": VLLM_NO_IDS,
        "no_reasons": list(VLLM_NO_REASONS),
    }
