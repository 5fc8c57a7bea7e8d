"""The records of a summary's hourly rates: scan/hourly.py makes them, output/rate_view.py
draws them (the terminal's sparkline). Apart from scan/records.py so that a scan that draws no
rate never builds them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class HourRate:
    """One hour of one process: its requests and the failures counted in its rate."""

    hour: str  # `YYYY-MM-DDTHH`, on the clock the summary names
    requests: int
    failures: int


@dataclass(frozen=True)
class ScopeRates:
    """The hours of one process (of one origin) that give a rate, oldest first, and its
    failures in no rate (hours without requests, or with fewer than their failures)."""

    origin: str | None
    process: str
    hours: tuple[HourRate, ...]
    unrated: int

    @property
    def requests(self) -> int:
        return sum(h.requests for h in self.hours)

    @property
    def failures(self) -> int:
        return sum(h.failures for h in self.hours)


@dataclass(frozen=True)
class HourlyRates:
    """Every process with a rate, and the failures of processes that never give one (logs
    without request lines), with how many such processes."""

    scopes: tuple[ScopeRates, ...]
    unrated: int
    unrated_processes: int
