"""What a rule of the diagnosis catalogue is (faults/rules.py holds the one list of them)."""

from __future__ import annotations

from dataclasses import dataclass

from harmony_doctor.models import Kind, Severity


@dataclass(frozen=True)
class Rule:
    code: str
    kind: Kind
    severity: Severity
    title: str
    cause: str
    fix: str
    refs: tuple[str, ...] = ()
    catch_all: bool = False  # its kind's rule when no evidence names another (one per kind)
    # a shape only a model writes, never a person illustrating the format: quoted in a paste,
    # it is output, and its warning is a finding as an error's is
    model_only: bool = False
