"""faults/wording.py: a form's expected/found wording lives in its entry, and describe.py reads
it there (no table of forms or kinds beside the catalogue)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from harmony_doctor.faults.catalogue import FORMS

# A made-up server's form of a kind the catalogue knows, with a wording of its own.
EXAMPLE = "zebrafish harmony gate refused the reply: bad header word 'assistantfinal'"
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
        "a made-up server (tests/faults/test_wording.py)",
        ({EXAMPLE!r},),
        pattern=r"zebrafish\\s*harmony\\s*gate\\s*refused",
        anchors=(b"zebrafish harmony",),
        keywords=("zebrafish",),
        code="HD185",
        wording=wording.fixed("a gate the zebrafish opens", "a gate it keeps shut"),
    ),
)
from harmony_doctor.cli.start import main

sys.argv = ["harmony-doctor", *sys.argv[1:]]
main()
"""


def test_a_new_form_says_its_own_wording_with_no_other_edit(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(f"ERROR 11-27 10:00:01 [b.py:2] {EXAMPLE}\n")
    done = subprocess.run(
        [sys.executable, "-c", ADD_FORM, "explain", "--format", "json", str(log)],
        capture_output=True,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert done.returncode == 1, done.stderr
    text = json.dumps(json.loads(done.stdout))
    assert "a gate the zebrafish opens" in text and "a gate it keeps shut" in text


def test_every_specific_form_has_its_wording() -> None:
    """Only generic forms (faults/generic.py) and the one scan reads itself go without: a
    generic form says what its kind's first specific form says."""
    without = {f.name for f in FORMS if f.wording is None and not f.generic}
    assert without == {"rejected_ids"}
