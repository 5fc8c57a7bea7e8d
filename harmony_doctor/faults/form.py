"""What a failure form is (faults/catalogue.py holds the one list of them)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from harmony_doctor.faults.wording import Wording
from harmony_doctor.models import Kind, Server

# A form's name is its entry's own (faults/catalogue.py), not a list kept apart: a new form is
# one entry, and tests/faults/test_catalogue.py checks the names are unique.
FormName = str
Origin = Literal["openai-harmony", "server"]


def phrase(text: str) -> str:
    """A phrase that survives wrapping: any whitespace, or none, between its words."""
    return r"\s*".join(re.escape(word) for word in text.split())


def optional_phrase(text: str) -> str:
    return r"(?:\s*" + phrase(text) + ")?"


@dataclass(frozen=True)
class Form:
    """One way a Harmony failure shows in text."""

    name: FormName
    kind: Kind
    origin: Origin  # openai-harmony's own error, or a server's
    writers: str  # who writes it, in which releases
    examples: tuple[str, ...]  # real texts of the form (tests check the entry against them)
    pattern: str | None = None  # regex source (case-insensitive); None: found by its own reader
    canonical: str | None = None  # the message as its writer prints it (before any detail)
    anchors: tuple[bytes, ...] = ()  # every line that shows the form holds one of these
    keywords: tuple[str, ...] = ()  # every match holds one of these lowercase words
    code: str | None = None  # the rule it reports; None: classify decides from the evidence
    server: Server | None = None  # the server the form alone gives away
    guess: Server | None = None  # the server named when no line says which
    versions: frozenset[int] | None = None  # openai-harmony releases (0.0.N as N, 5 = 0.0.5+)
    output_follows: bool = False  # the model's output may follow on a `Model Output:` line
    generic: bool = False  # a statement in the grammar's terms: tried where no other form matches
    # the last resort (generic too): read only where no other form, generic or not, matches
    fallback: bool = False
    # what it expected and found, in words (faults/wording.py); None: a generic form says what
    # its kind's first specific form says
    wording: Wording | None = None

    @property
    def rank(self) -> int:
        """Which forms give way to which (logs/messages.py `_hit`, the Rust search alike): a
        form of a higher rank is the hit only where none of a lower rank matches the text.
        0: a writer's own words; 1: generic; 2: the fallback."""
        return 2 if self.fallback else 1 if self.generic else 0
