"""The counters: what every read added, folded into a bounded set of totals (no per-failure
growth), with the rate's scopes of scan (origin, process, pid, hour) for the unrated count."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from harmony_doctor.models import RequestTally, ScanEvent
from harmony_doctor.scan.names import process_of
from harmony_doctor.scan.records import FileScan
from harmony_doctor.scan.scopes import REQUEST_KINDS

HOURS_KEPT = 48  # the hours whose request counts still decide whether a failure is rated
FailureKey = tuple[str, str, str, str]  # code, kind, server, origin
ProcessKey = tuple[str, str, str, str]  # origin, process, pid, server
ScopeKey = tuple[str, str, str, str]  # origin, process, pid, hour


def _text(value: object) -> str:
    return "" if value is None else str(value)


@dataclass
class Counts:
    """Totals since the watch began (carried over restarts by the state file)."""

    failures: dict[FailureKey, int] = field(default_factory=dict)
    unrated: dict[str, int] = field(default_factory=dict)  # by origin
    last_failure: dict[str, float] = field(default_factory=dict)  # Unix seconds, by origin
    # Requests each process logged, each way scan counts them (access lines, `Received
    # request` lines, completions); a process counts the way that counts the most (as
    # scan/scopes.py counted_tallies), which keeps the total monotonic.
    requests: dict[ProcessKey, dict[str, int]] = field(default_factory=dict)
    scopes: dict[ScopeKey, int] = field(default_factory=dict)  # requests per recent scope
    bytes: int = 0
    lines: int = 0
    read_errors: int = 0  # inputs not opened or not read whole (said on stderr each time)
    cut_lines: int = 0  # lines longer than inputs/files.MAX_LINE, read to that length only

    def add(self, found: FileScan, now: float) -> None:
        """Fold one read's failures and requests in."""
        self.bytes += found.report.bytes
        self.lines += found.report.lines
        self._requests(found.tallies)
        for event in found.events:
            key = (event.code, event.kind, _text(event.server), _text(event.origin))
            self.failures[key] = self.failures.get(key, 0) + 1
            origin = _text(event.origin)
            self.last_failure[origin] = now
            if not self._rated(event):
                self.unrated[origin] = self.unrated.get(origin, 0) + 1

    def _requests(self, tallies: Iterable[RequestTally]) -> None:
        for tally in tallies:
            process = process_of(tally.file)
            key = (_text(tally.origin), process, _text(tally.pid), _text(tally.server))
            kinds = self.requests.setdefault(key, {})
            kind = tally.kind or REQUEST_KINDS[0]
            kinds[kind] = kinds.get(kind, 0) + tally.count
            if tally.hour is not None:
                scope = (_text(tally.origin), process, _text(tally.pid), tally.hour)
                self.scopes[scope] = self.scopes.get(scope, 0) + tally.count
        hours = sorted({scope[3] for scope in self.scopes})
        if len(hours) > HOURS_KEPT:
            oldest = hours[-HOURS_KEPT]
            self.scopes = {k: n for k, n in self.scopes.items() if k[3] >= oldest}

    def _rated(self, event: ScanEvent) -> bool:
        """Whether the failure's scope (its process and hour) counted requests; a failure
        without a pid takes any pid of its process (a traceback line the server did not stamp)."""
        if event.timestamp is None:
            return False
        hour = event.timestamp[:13]
        origin, process = _text(event.origin), process_of(event.file)
        if event.pid is not None:
            return self.scopes.get((origin, process, str(event.pid), hour), 0) > 0
        return any(
            n > 0 and k[0] == origin and k[1] == process and k[3] == hour
            for k, n in self.scopes.items()
        )

    def requests_by(self) -> dict[tuple[str, str], int]:
        """Requests by (server, origin): each process counted its one way."""
        out: dict[tuple[str, str], int] = {}
        for (origin, _, _, server), kinds in self.requests.items():
            out[(server, origin)] = out.get((server, origin), 0) + max(kinds.values(), default=0)
        return out

    def failures_by_code(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for (code, _, _, _), n in self.failures.items():
            out[code] = out.get(code, 0) + n
        return out

    def copy(self) -> Counts:
        return Counts.from_json(self.to_json())

    def to_json(self) -> dict[str, Any]:
        return {
            "failures": [[*k, n] for k, n in sorted(self.failures.items())],
            "unrated": dict(self.unrated),
            "last_failure": dict(self.last_failure),
            "requests": [[*k, dict(v)] for k, v in sorted(self.requests.items())],
            "scopes": [[*k, n] for k, n in sorted(self.scopes.items())],
            "bytes": self.bytes,
            "lines": self.lines,
            "read_errors": self.read_errors,
            "cut_lines": self.cut_lines,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Counts:
        return cls(
            {(a, b, c, d): int(n) for a, b, c, d, n in data.get("failures", [])},
            {str(k): int(v) for k, v in data.get("unrated", {}).items()},
            {str(k): float(v) for k, v in data.get("last_failure", {}).items()},
            {(a, b, c, d): dict(v) for a, b, c, d, v in data.get("requests", [])},
            {(a, b, c, d): int(n) for a, b, c, d, n in data.get("scopes", [])},
            int(data.get("bytes", 0)),
            int(data.get("lines", 0)),
            int(data.get("read_errors", 0)),
            int(data.get("cut_lines", 0)),
        )
