"""Real pastes from public bug threads (texts/, index in expected.jsonl): each explained as its
thread says it should be.

Every entry names the paste's source thread, the exit code `explain` must give, and the
findings it must report: for each, the codes accepted (one failure may fit two rules), the
token id where one is named, and the servers that may be named (null: unknown, the text shows
no server). A negative control (a look-alike from another model family, a provider error, valid
Harmony quoted) must report nothing. An entry marked `miss` is one the tool cannot explain yet,
for the reason given: it must at least stay quiet (no false finding) rather than guess.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import run
from tests.pastes.findings import Seen, findings

HERE = Path(__file__).parent
INDEX = [json.loads(line) for line in (HERE / "expected.jsonl").read_text().splitlines()]


def _matches(want: dict[str, Any], seen: Seen) -> bool:
    return (
        seen.code in want["code"]
        and (want["token"] is None or seen.token == want["token"])
        and seen.server in want["server"]
    )


@pytest.mark.parametrize("entry", INDEX, ids=[e["file"][:3] for e in INDEX])
def test_a_real_paste_is_explained_as_its_thread_says(entry: dict[str, Any]) -> None:
    assert entry["source"].split()[-1].startswith("https://github.com/")
    text = (HERE / "texts" / entry["file"]).read_text()
    seen = list(findings(text))
    if "miss" in entry:
        assert seen == [], f"a known miss must stay quiet ({entry['miss']})"
        return
    for want in entry["findings"]:
        hit = next((s for s in seen if _matches(want, s)), None)
        assert hit is not None, f"expected {want} among {seen}"
        seen.remove(hit)
    if entry["exit"] == 0:
        assert seen == [], "a negative control reports nothing"


def test_the_index_holds_at_least_40_explained_pastes_and_their_negative_controls() -> None:
    explained = [e for e in INDEX if "miss" not in e]
    assert len(explained) >= 40
    assert sum(e["exit"] == 0 for e in INDEX) >= 15
    assert {p.name for p in (HERE / "texts").iterdir()} == {e["file"] for e in INDEX}


@pytest.mark.parametrize(
    "entry", [e for e in INDEX if "miss" not in e][::7], ids=lambda e: e["file"][:3]
)
def test_the_command_line_exits_as_the_index_says(entry: dict[str, Any]) -> None:
    result = run(["explain", str(HERE / "texts" / entry["file"])])
    assert result.exit_code == entry["exit"], result.stdout + result.stderr
    assert result.stderr == ""
