"""A source's id lines (vLLM's logged completions) as completions: streamed deltas joined per
request, each finished completion counted once, kept for diagnosis unless our replay finds it
clean (scan/source.py feeds it the scan core's id lines)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import cache
from typing import TYPE_CHECKING, TypeAlias

from harmony_doctor.errors import InputError
from harmony_doctor.harmony.vocab import FIRST_SPECIAL, MESSAGE, VOCAB_SIZE
from harmony_doctor.inputs.wrappers import Unwrapper
from harmony_doctor.lazy_regex import Pattern
from harmony_doctor.models import TokenInput
from harmony_doctor.native import native_for, vllm_output_key
from harmony_doctor.scan.core import IdLine, hour_key
from harmony_doctor.scan.found import Clock, Place, SourceScan
from harmony_doctor.streams.clean import CleanStreams

if TYPE_CHECKING:
    from datetime import datetime

    from harmony_doctor.inputs.vllm_requests import RequestStreams, VllmRecord
    from harmony_doctor.models import ScanEvent
    from harmony_doctor.native import OutputKey

_RESPONSE_ID = Pattern(rb"Generated response ([^\s:(]+)")
MAX_PENDING = 10_000  # vLLM requests waiting for their last log line
# What diagnosing a kept completion finds (scan/findings.py completion_diagnosis).
Diagnose: TypeAlias = "Callable[[TokenInput, Place], Iterable[ScanEvent]]"


class CompletionReader:
    """The core's id lines as completions: streamed deltas joined per request, each finished
    completion counted once, and kept for diagnosis unless our replay finds it clean."""

    def __init__(
        self,
        out: SourceScan,
        unwrapper: Unwrapper,
        clock: Clock,
        clean: CleanStreams | None,
        native: bool,
        diagnose: Diagnose | None,
    ) -> None:
        self.out = out
        self.diagnose = diagnose
        self.unwrapper = unwrapper
        self.clock = clock
        self.clean = clean
        self.native = native
        self.settle: Callable[[bytes, int, int, int], OutputKey | None] | None = None
        if clean is not None and native_for(native):
            self.settle = vllm_output_key
        self._streams: RequestStreams | None = None
        self.finished_requests: set[str] = set()
        # Lines damaged data cut short (the last of a part read to a damaged end): ids cut
        # there were cut by the damage, not logged wrong by the server, so they are no HD177.
        self.cut_by_damage: set[int] = set()

    @property
    def streams(self) -> RequestStreams:
        """The requests still open (vLLM's reader loads with the first id line: a log that
        logged no completion never loads it)."""
        if self._streams is None:
            from harmony_doctor.inputs.vllm_requests import RequestStreams

            self._streams = RequestStreams()
        return self._streams

    def id_line(self, id_line: IdLine) -> None:
        if self.settle is not None and self._settled_by_shape(id_line):
            return
        stamp = self.clock.parse(id_line.stamp)
        line = self.unwrapper.source_line(id_line.line)
        place = Place(line, stamp, id_line.pid)
        try:
            record = _parser()(id_line.text, line, self.native)
        except InputError as exc:
            if line not in self.cut_by_damage:
                self._rejected(id_line.text, str(exc), place)
            return
        if record is not None:
            self._add_record(record, place)

    def close(self, lines: int) -> None:
        """The end of the source: requests still open are completions as far as they got."""
        if self._streams is None:
            return
        for request_id in list(self.streams.streams):
            inp = self.streams.pop(request_id)
            if inp is not None:
                self._keep(inp, Place(lines, None, None))

    def _rejected(self, text: bytes, why: str, place: Place) -> None:
        """A logged completion whose ids openai-harmony rejects (999999999, -5, 1.5): the log
        is corrupt or cut. A failure of its own (HD177), and a request; never silence. Prompt
        ids are not a completion: left alone."""
        if b"output_token_ids" not in text:
            return
        found = _RESPONSE_ID.search(text)
        request_id = found.group(1).decode("utf-8", "replace") if found else None
        if request_id is not None:
            self.streams.streams.pop(request_id, None)  # what came before cannot be replayed
            self._finished(request_id)
        self._count(place.timestamp, place.pid)
        self.out.rejected.append((why, request_id, place))

    def _settled_by_shape(self, id_line: IdLine) -> bool:
        """A whole completion on one line whose shape our replay finds clean: counted as
        `_add_record` would count it, without building its tokens, its time or its record
        (in the hour of its stamp's hour key, as the core's request tallies are). Anything
        else (a stream already open, a repeat, a fault, a line the Rust parser leaves to
        Python) takes the general path."""
        assert self.settle is not None and self.clean is not None
        found = self.settle(id_line.text, VOCAB_SIZE, FIRST_SPECIAL, MESSAGE)
        if found is None:
            return False
        request_id, complete, key = found.request_id, found.complete, found.key
        reason = found.finish_reason
        if not key or (reason is None and not complete) or request_id in self.streams.streams:
            return False
        if complete and request_id in self.finished_requests:
            return False
        if not self.clean.by_key(key):
            return False
        self._finished(request_id)
        self.out.completed[(id_line.pid, self.clock.hour(hour_key(id_line.stamp)))] += 1
        return True

    def _add_record(self, record: VllmRecord, place: Place) -> None:
        if record.request_id in self.finished_requests and record.kind == "complete":
            return
        self.streams.add(record)
        if record.finish_reason is not None or record.kind == "complete":
            self._complete(record.request_id, place)
        if len(self.streams.streams) > MAX_PENDING:
            self._complete(next(iter(self.streams.streams)), place)

    def _complete(self, request_id: str, place: Place) -> None:
        inp = self.streams.pop(request_id)
        self._finished(request_id)
        if inp is not None:
            self._keep(inp, place)

    def _finished(self, request_id: str) -> None:
        """Remember a finished request, so that vLLM's later `complete` line for it is not a
        second completion (a bounded memory: it forgets all at MAX_PENDING)."""
        self.finished_requests.add(request_id)
        if len(self.finished_requests) > MAX_PENDING:
            self.finished_requests.clear()

    def _count(self, stamp: datetime | None, pid: int | None) -> None:
        """One finished completion, in its process and hour (as request lines are counted)."""
        hour = stamp.strftime("%Y-%m-%dT%H") if stamp is not None else None
        self.out.completed[(pid, hour)] += 1

    def _keep(self, inp: TokenInput, place: Place) -> None:
        """Count a finished completion; keep it for diagnosis unless `clean` settles it
        (memory then grows with the failures, not with the log)."""
        self._count(place.timestamp, place.pid)
        if self.clean is not None and self.clean(inp.tokens):
            return
        if self.diagnose is not None:
            self.out.replayed.extend(self.diagnose(inp, place))
        else:
            self.out.completions.append((inp, place))


@cache
def _parser() -> Callable[[bytes, int, bool | None], VllmRecord | None]:
    """vLLM's id-line reader, loaded with the first id line that needs it."""
    from harmony_doctor.inputs.vllm_requests import parse_vllm_bytes

    return parse_vllm_bytes
