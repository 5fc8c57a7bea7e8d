"""One token stream holds at most a gpt-oss context (131,072 ids): a longer list is refused
with that said, before it is parsed (a list of 6.7 million ids took 1.9 GB in explain)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harmony_doctor.errors import InputError
from harmony_doctor.inputs.lengths import MAX_COMPLETION_TOKENS, refuse_long_lists
from tests.peak import BOUND_MIB, peak_of

_HEAD = [200006, 173781, 200005, 35644, 200008]


def _ids(count: int) -> str:
    return "[" + ", ".join(map(str, [*_HEAD, *([1000] * (count - len(_HEAD) - 1)), 200007])) + "]"


def test_a_list_of_one_context_is_read() -> None:
    refuse_long_lists(_ids(MAX_COMPLETION_TOKENS))


def test_a_list_past_one_context_is_refused_before_it_is_parsed() -> None:
    with pytest.raises(InputError, match=r"more than 131,072 token ids in one stream"):
        refuse_long_lists(_ids(MAX_COMPLETION_TOKENS + 1))
    refuse_long_lists('{"text": "' + "1, " * MAX_COMPLETION_TOKENS + '"}')  # not a list of ids


def test_explain_refuses_millions_of_ids_in_one_line_and_stays_under_the_bound(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ids.json"
    path.write_text(_ids(2_000_000))
    run = peak_of(["explain", str(path), "--format", "json"], tmp_path, hang=300)
    assert run.exit_code == 2 and run.stdout == ""
    assert run.stderr.startswith("harmony-doctor: error: more than 131,072 token ids in one stream")
    assert run.mib < BOUND_MIB, f"{run.mib} MiB peak"
