"""Frozen records that flow from ingestion through replay and diagnosis to rendering.

Every record is named here. Those every path takes (token inputs, log failures) are in
models/core.py; a scan's events and tallies (models/scan.py), a stream's replay and diagnosis
(models/streams.py) and recover's, repro's and render's (models/salvage.py) are built on first
use: a frozen dataclass costs about a millisecond to create, and a log's `explain` needs none
of them, a clean scan none of recover's.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from harmony_doctor.models.core import (
    Confidence,
    Detected,
    ErrorKind,
    EventSource,
    Kind,
    LogError,
    LogKind,
    Server,
    Severity,
    TokenInput,
    WarningKind,
)

if TYPE_CHECKING:
    from harmony_doctor.models.salvage import (
        ParserResult,
        Received,
        Recovery,
        RenderedPrompt,
        RenderWarning,
        SalvagePiece,
        Shrink,
        SkippedSpan,
        ToolCall,
    )
    from harmony_doctor.models.scan import LoggedFailure, RequestTally, ScanEvent
    from harmony_doctor.models.streams import Diagnosis, Finding, Message, Replay, ReplayFault

__all__ = [
    "Confidence",
    "Detected",
    "Diagnosis",
    "ErrorKind",
    "EventSource",
    "Finding",
    "Kind",
    "LogError",
    "LogKind",
    "LoggedFailure",
    "Message",
    "ParserResult",
    "Received",
    "Recovery",
    "RenderWarning",
    "RenderedPrompt",
    "Replay",
    "ReplayFault",
    "RequestTally",
    "SalvagePiece",
    "ScanEvent",
    "Server",
    "Severity",
    "Shrink",
    "SkippedSpan",
    "TokenInput",
    "ToolCall",
    "WarningKind",
]

# The records built on first use, and the module each is defined in (PEP 562).
_LATER = {
    **dict.fromkeys(("LoggedFailure", "RequestTally", "ScanEvent"), "harmony_doctor.models.scan"),
    **dict.fromkeys(
        ("Diagnosis", "Finding", "Message", "Replay", "ReplayFault"),
        "harmony_doctor.models.streams",
    ),
    **dict.fromkeys(
        (
            "ParserResult",
            "Received",
            "Recovery",
            "RenderWarning",
            "RenderedPrompt",
            "SalvagePiece",
            "Shrink",
            "SkippedSpan",
            "ToolCall",
        ),
        "harmony_doctor.models.salvage",
    ),
}


def __getattr__(name: str) -> Any:
    if name in _LATER:
        return getattr(importlib.import_module(_LATER[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
