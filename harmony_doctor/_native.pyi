"""Types of the Rust scan core (native/src/lib.rs); scan/core.py wraps it as NativeCore."""

import builtins
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar, final

from harmony_doctor.faults.shapes import LineShape

_Line = TypeVar("_Line")
# FirstPass.take: per process, key, lines, timestamp and its line, pid, server and its line,
# request line, record line and the one before it
_Absorbed = tuple[
    str,
    int,
    str | None,
    int | None,
    int | None,
    str | None,
    int | None,
    int | None,
    int | None,
    int | None,
]

__all__ = [
    "Anatomy",
    "Batch",
    "Completions",
    "Core",
    "FirstPass",
    "FormFound",
    "Hits",
    "IdLine",
    "OutputKey",
    "OutputLine",
    "Stats",
    "Window",
    "Wrappers",
    "clean_key",
    "mallopt",
]

@final
class Window:
    """A hit window: scan/core.py `Window`."""

    @property
    def first_line(self) -> int: ...
    @property
    def text(self) -> bytes: ...
    @property
    def hit_lines(self) -> tuple[int, ...]: ...
    @property
    def stamp_before(self) -> bytes | None: ...

@final
class IdLine:
    """A line holding token ids: scan/core.py `IdLine`."""

    @property
    def line(self) -> int: ...
    @property
    def text(self) -> bytes: ...
    @property
    def stamp(self) -> bytes | None: ...
    @property
    def pid(self) -> int | None: ...
    @property
    def cut(self) -> bool: ...

@final
class Batch:
    """The windows and id lines one feed() or finish() settled: scan/core.py `Batch`."""

    @property
    def windows(self) -> list[Window]: ...
    @property
    def id_lines(self) -> list[IdLine]: ...

@final
class Stats:
    """The counts so far: scan/core.py `Stats`."""

    @property
    def lines(self) -> int: ...
    @property
    def cut_lines(self) -> int: ...
    @property
    def bytes(self) -> int: ...
    @property
    def access_lines(self) -> int: ...
    @property
    def received_lines(self) -> int: ...
    @property
    def tallies(self) -> dict[tuple[str, int | None, builtins.bytes | None], int]: ...
    @property
    def first_access_line(self) -> builtins.bytes | None: ...

@final
class Core:
    """The scan core: feed(data, meta=None) -> Batch, finish() -> Batch, stats() -> Stats."""

    def __new__(
        cls,
        anchors: Sequence[bytes],
        markup_line: str,
        shapes: Sequence[LineShape],
        before: int = 3072,
        after: int = 1024,
        max_line: int = 4194304,
        max_window: int = 1048576,
        ids: bool = True,
        *,
        levels: Sequence[str],
        pid_key: str,
    ) -> Core: ...
    @property
    def anchors(self) -> list[bytes]: ...
    @property
    def searched_anchors(self) -> list[bytes]: ...
    @property
    def markup_line(self) -> str: ...
    def feed(
        self,
        data: bytes,
        meta: Sequence[tuple[int, bytes | None, int | None]] | None = None,
        newlines: int | None = None,
    ) -> Batch: ...
    def set_split(self, min_bytes: int | None) -> None: ...
    def finish(self) -> Batch: ...
    def stats(self) -> Stats: ...

@final
class Anatomy(Generic[_Line]):
    """A log line taken apart (harmony_doctor/logs/lines.py `anatomize`), made of its patterns."""

    def __new__(
        cls,
        *,
        prefixes: str,
        shapes: Sequence[tuple[str, str | None, str | None, str | None]],
        never: str,
        month_day: str,
        month_day_server: str,
        key_pid: str,
        entity: str,
        frame: str,
        frame_path: str,
        frame_start: str,
        servers: str,
        server_groups: Sequence[tuple[str, str]],
        gutter: Sequence[str],
        path_server: Callable[[str], str | None],
        fallback: Callable[[int, str], _Line],
        line: type[_Line],
    ) -> Anatomy[_Line]: ...
    def read(self, number: int, raw: str) -> _Line: ...
    def counts(self) -> tuple[int, int]: ...

@final
class FirstPass:
    """A failure window's first pass (harmony_doctor/logs/firstpass.py): the ordinary lines
    summed per process, made of the line anatomy's patterns, the catalogue's forms and the
    traceback shapes."""

    def __new__(
        cls,
        *,
        prefixes: str,
        shapes: Sequence[tuple[str, str | None, str | None, str | None]],
        never: str,
        month_day: str,
        month_day_server: str,
        key_pid: str,
        entity: str,
        frame: str,
        frame_path: str,
        frame_start: str,
        servers: str,
        server_groups: Sequence[tuple[str, str]],
        gutter: Sequence[str],
        forms: Sequence[str],
        traceback: str,
        request: str,
        model_output: str,
        frame_source: str,
        anatomy: Anatomy[object] | None = None,
    ) -> FirstPass: ...
    def absorb(self, number: int, raw: str, room: int) -> int: ...
    def absorb_runs(
        self, number: int, lines: list[str], start: int, room: int
    ) -> list[tuple[int, int, object, list[_Absorbed] | None]]: ...
    def take(self) -> list[_Absorbed]: ...
    def fresh(self) -> FirstPass: ...

@final
class FormFound:
    """The form a text holds, settled in Rust: its index (None: no form matches), where its
    match starts and ends, and its named groups (Python's `match.groupdict()`)."""

    form: int | None
    start: int
    end: int
    groups: dict[str, str | None]

@final
class Hits:
    """Which catalogue form a text holds first (harmony_doctor/logs/messages.py `find_hit`),
    made of the forms' patterns; `ranks`: per pattern, its form's rank (faults/form.py)."""

    def __new__(cls, *, patterns: Sequence[str], ranks: Sequence[int]) -> Hits: ...
    def find(self, text: str, position: int = 0) -> FormFound | None: ...
    def counts(self) -> tuple[int, int]: ...

@final
class OutputLine:
    """A vLLM `Generated response` line in its common shape (see Completions.output_line)."""

    @property
    def request_id(self) -> str: ...
    @property
    def complete(self) -> bool: ...
    @property
    def delta(self) -> bool: ...
    @property
    def ids(self) -> tuple[int, ...] | None: ...
    @property
    def finish_reason(self) -> str | None: ...

@final
class OutputKey:
    """What settles a `Generated response` line (see Completions.output_key)."""

    @property
    def request_id(self) -> str: ...
    @property
    def complete(self) -> bool: ...
    @property
    def finish_reason(self) -> str | None: ...
    @property
    def key(self) -> tuple[int, ...] | None: ...

@final
class Completions:
    """vLLM's `Generated response` lines read, made of their words (inputs/log_words.py)."""

    def __new__(
        cls,
        *,
        generated: str,
        output_key: str,
        finish_key: str,
        modes: Sequence[str],
        no_ids: str,
        no_reasons: Sequence[str],
    ) -> Completions: ...
    def output_line(self, line: bytes, vocab_size: int) -> OutputLine | None: ...
    def output_key(
        self, line: bytes, vocab_size: int, first_special: int, message: int
    ) -> OutputKey | None: ...

@final
class Wrappers:
    """The wrapped-line questions of every chunk read, made of the wrappers' words."""

    def __new__(
        cls,
        *,
        months: Sequence[str],
        cri_streams: Sequence[str],
        cri_whole: str,
        docker: Sequence[str],
        docker_attrs: str,
        journal_message: str,
        journal_marks: Sequence[str],
        journal_pid: str,
        json_fields: Sequence[str],
        meta_keys: Sequence[str],
        pid_keys: Sequence[str],
        levels: Sequence[str],
        pid_key: str,
    ) -> Wrappers: ...
    def chunk_lines(self, data: bytes) -> tuple[int, bool]: ...
    def unwrap_records(
        self, body: bytes
    ) -> tuple[bytes, tuple[int, int, int, int], list[tuple[int, int, str]]] | None: ...

def clean_key(tokens: Sequence[int], first_special: int, message: int) -> tuple[int, ...]: ...
def mallopt(param: int, value: int) -> bool: ...
