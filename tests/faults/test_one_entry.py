"""A new failure form is one catalogue entry: added to faults/engines.py's list (here, in a
fresh process, before anything reads the catalogue), its example is found by `scan` on both
scan cores (the Rust core gets its anchor when it is built) and by `explain`, with no other
edit: no name list, no Rust rebuild, no wording table (its expected/found wording is in the
entry too, faults/wording.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harmony_doctor.native import NATIVE_ENV, native_available

# A made-up server's wording of a kind the catalogue knows, under an anchor no form has.
EXAMPLE = "zebrafish harmony gate refused the reply: bad header word 'assistantfinal'"
EXPECTED, FOUND = "a gate the zebrafish opens", "a gate it keeps shut"
ADD_FORM = f"""
import sys
from harmony_doctor.faults import engines, wording
from harmony_doctor.faults.form import Form

engines.ENGINE_FORMS = (
    *engines.ENGINE_FORMS,
    Form(
        "zebrafish_gate",
        "server_rejected",
        "server",
        "a made-up server (tests/faults/test_one_entry.py)",
        ({EXAMPLE!r},),
        pattern=r"zebrafish\\s*harmony\\s*gate\\s*refused",
        anchors=(b"zebrafish harmony",),
        keywords=("zebrafish",),
        code="HD185",
        wording=wording.fixed({EXPECTED!r}, {FOUND!r}),
    ),
)
from harmony_doctor.cli.start import main

sys.argv = ["harmony-doctor", *sys.argv[1:]]
main()
"""


def _run(tmp_path: Path, *args: str, native: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, NATIVE_ENV: "1" if native else "0", "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-c", ADD_FORM, *args], capture_output=True, text=True, env=env
    )


@pytest.fixture
def log(tmp_path: Path) -> Path:
    path = tmp_path / "server.log"
    path.write_text(
        "INFO 11-27 10:00:00 [a.py:1] started\n"
        f"ERROR 11-27 10:00:01 [b.py:2] {EXAMPLE}\n"
        "INFO 11-27 10:00:02 [a.py:1] done\n"
    )
    return path


@pytest.mark.parametrize(
    "native", [pytest.param(True, id="rust"), pytest.param(False, id="python")]
)
def test_scan_finds_a_form_added_as_one_entry(tmp_path: Path, log: Path, native: bool) -> None:
    if native and not native_available():
        pytest.skip("the Rust extension is not built")
    done = _run(tmp_path, "scan", "--format", "json", str(log), native=native)
    assert done.returncode == 1, done.stderr
    groups = json.loads(done.stdout)["groups"]
    assert [(g["code"], g["count"], g["example"]) for g in groups] == [("HD185", 1, f"{log}:2")]


def test_explain_finds_a_form_added_as_one_entry(tmp_path: Path, log: Path) -> None:
    done = _run(tmp_path, "explain", "--format", "json", str(log))
    assert done.returncode == 1, done.stderr
    assert "HD185" in done.stdout and "zebrafish" in done.stdout
    # the form's own wording, not its kind's (describe.py keeps no table of forms or kinds)
    assert EXPECTED in done.stdout and FOUND in done.stdout


def test_without_the_entry_the_example_is_no_failure(tmp_path: Path, log: Path) -> None:
    env = {**os.environ, "NO_COLOR": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "harmony_doctor", "scan", "--format", "json", str(log)],
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["totals"]["failures"] == 0


def test_a_new_form_name_needs_no_list_of_names(tmp_path: Path) -> None:
    """The type checker takes a new form's name from its entry alone (no Literal of names
    kept apart in faults/form.py to extend)."""
    entry = tmp_path / "entry.py"
    entry.write_text(
        "from harmony_doctor.faults.form import Form\n\n"
        'FORM = Form("zebrafish_gate", "server_rejected", "server", "x", ("y",))\n'
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--cache-dir",
            str(tmp_path / "cache"),
            str(entry),
        ],
        capture_output=True,
        text=True,
        cwd=Path(__file__).parents[2],
    )
    assert done.returncode == 0, done.stdout
