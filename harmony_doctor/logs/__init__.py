"""Log text -> the Harmony failures it records, once each.

The names below are loaded at their first use (PEP 562), so that importing one module of the
package (scan's `logs.extract`, `logs.servers`) does not load the others."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harmony_doctor.logs.extract import extract_errors, extract_text
    from harmony_doctor.logs.servers import version_label
    from harmony_doctor.logs.stripped import find_stripped

__all__ = ["extract_errors", "extract_text", "find_stripped", "version_label"]

_HOMES = {
    "extract_errors": "extract",
    "extract_text": "extract",
    "find_stripped": "stripped",
    "version_label": "servers",
}


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value
