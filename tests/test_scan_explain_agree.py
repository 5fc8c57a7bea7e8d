"""`scan` finds the same failures as `explain` on every file they both read (issue 33): the
error codes of explain's findings (its log's failures and its replayed completions) against
the error codes of scan's events, on every real paste, golden input and sample.

Where they may differ, each by a named rule below (not a list of files):
- a traceback cut before its exception line, judged by its frames (evidence/frames.py): only
  a whole paste shows where a traceback stops, while scan reads lines as they stream;
- a logged error and the replay of the completion it reports: explain shows both (the
  server's line, and the replay's diagnosis: tests/test_explain_pastes.py counts 2), scan
  folds them into one event (scan/findings.py merge_duplicates).
Scan joins a summary and its traceback's raise as explain does (scan/findings.py
_join_sightings), and drops an engine's parse failure over another family's markup, and its
copies nearby (_drop_other_families), as explain's `_only_harmony` does over the whole paste.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

import harmony_doctor as hd
from harmony_doctor.errors import InputError
from harmony_doctor.evidence.frames import cut_render
from harmony_doctor.inputs.reader import read_input
from tests.pastes.findings import vocab

ROOT = Path(__file__).resolve().parent.parent
FILES = sorted(
    [
        *(ROOT / "tests" / "pastes" / "texts").iterdir(),
        *(ROOT / "tests" / "cases").glob("*.in"),
        *(p for p in (ROOT / "samples").iterdir() if p.is_file()),
    ]
)


def _explained(path: Path) -> Counter[str] | None:
    """explain's error codes, or None when explain does not read the file (a chat request)."""
    try:
        explained = hd.explain_input(read_input(str(path)), vocab())
    except InputError:
        return None
    if isinstance(explained, hd.ExplainedStream):
        return Counter(f.code for f in explained.diagnosis.findings if f.severity == "error")
    found = explained.explanation
    codes = Counter(e.code for e in found.errors if e.severity == "error")
    for completion in found.completions:
        codes.update(f.code for f in completion.findings if f.severity == "error")
    return codes


def _scanned(path: Path) -> Counter[str]:
    """scan's error codes."""
    return Counter(e.code for e in hd.scan_file(path).events if e.severity == "error")


def _explain_only(text: str, extra: Counter[str]) -> bool:
    """Codes explain finds and scan may not: a cut traceback read by its frames."""
    cut = cut_render(text)
    return cut is not None and set(extra) == {cut.code}


def _replayed_and_logged(found: hd.LogExplanation, extra: Counter[str]) -> bool:
    """explain's extra codes are failures it shows as a logged error and as a replay both."""
    logged = Counter(e.code for e in found.errors if e.severity == "error")
    replayed = Counter(
        f.code for d in found.completions for f in d.findings if f.severity == "error"
    )
    return all(min(logged[code], replayed[code]) >= count for code, count in extra.items())


def test_the_files_compared_are_the_pastes_the_goldens_and_the_samples() -> None:
    assert len(FILES) >= 150


@pytest.mark.parametrize("path", FILES, ids=[f"{p.parent.name}/{p.name}" for p in FILES])
def test_scan_finds_what_explain_finds(path: Path) -> None:
    explained = _explained(path)
    scanned = _scanned(path)
    if explained is None:  # a chat request: explain says what to run instead
        assert not scanned, "a request holds no failure for scan either"
        return
    if scanned == explained:
        return
    text = path.read_text(encoding="utf-8", errors="replace")
    only_explain, only_scan = explained - scanned, scanned - explained
    if only_explain and not only_scan:
        if _explain_only(text, only_explain):
            return
        explanation = hd.explain_input(read_input(str(path)), vocab())
        if isinstance(explanation, hd.ExplainedLog) and _replayed_and_logged(
            explanation.explanation, only_explain
        ):
            return
    pytest.fail(f"explain {sorted(explained.elements())}, scan {sorted(scanned.elements())}")


# The sample logs of logged errors (vllm-requests.log's completions, logged twice under the
# same request ids, are the named exception above: a logged error and its replay).
LOGS = [
    ROOT / "samples" / name
    for name in (
        "vllm-traceback.log",
        "other-engines.log",
        "lmdeploy.log",
        "sglang-exception-group.log",
        "error-bodies.txt",
    )
]
NO_STAMPS = (
    'INFO:     10.0.0.1:5000 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
    "openai_harmony.HarmonyError: Unexpected token 200002 while expecting start token 200006\n"
    'INFO:     10.0.0.1:5000 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error\n'
)


@pytest.mark.parametrize("path", LOGS, ids=[p.name for p in LOGS])
def test_a_log_shown_twice_is_every_failure_twice_in_both(path: Path, tmp_path: Path) -> None:
    """Red team H9: `cat log log` was 3 failures in explain and 6 in scan (explain folded the
    same code and message at any distance)."""
    text = path.read_text()
    twice = tmp_path / path.name
    twice.write_text(text + ("" if text.endswith("\n") else "\n") + text)
    once = _explained(path)
    assert once is not None
    assert _explained(twice) == _scanned(twice) == once + once


def test_requests_failing_alike_count_one_each_in_both(tmp_path: Path) -> None:
    """Red team H9: five failing requests, logged without stamps, were one finding."""
    path = tmp_path / "notime.log"
    path.write_text(NO_STAMPS * 5)
    assert _explained(path) == _scanned(path) == Counter({"HD111": 5})
