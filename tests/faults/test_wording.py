"""faults/wording.py: a form's expected/found wording lives in its entry, and describe.py reads
it there (no table of forms or kinds beside the catalogue); tests/faults/test_one_entry.py
adds a form with its own wording and finds it said."""

from __future__ import annotations

from harmony_doctor.faults.catalogue import FORMS


def test_every_specific_form_has_its_wording() -> None:
    """Only generic forms (faults/generic.py) and the one scan reads itself go without: a
    generic form says what its kind's first specific form says."""
    without = {f.name for f in FORMS if f.wording is None and not f.generic}
    assert without == {"rejected_ids"}
