"""One token stream holds at most a gpt-oss context (131,072 ids): a longer list is refused
with that said, before it is parsed (a list of 6.7 million ids took 1.9 GB in explain)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harmony_doctor.errors import InputError
from harmony_doctor.inputs.lengths import (
    MAX_COMPLETION_TOKENS,
    MAX_INPUT_TOKENS,
    refuse_long_lists,
)
from tests.helpers import run
from tests.peak import peak_of

_HEAD = [200006, 173781, 200005, 35644, 200008]


def _ids(count: int) -> str:
    return "[" + ", ".join(map(str, [*_HEAD, *([1000] * (count - len(_HEAD) - 1)), 200007])) + "]"


def test_a_list_of_one_context_is_read() -> None:
    refuse_long_lists(_ids(MAX_COMPLETION_TOKENS))


def test_a_list_past_one_context_is_refused_before_it_is_parsed() -> None:
    with pytest.raises(InputError, match=r"more than 131,072 token ids in one stream"):
        refuse_long_lists(_ids(MAX_COMPLETION_TOKENS + 1))
    refuse_long_lists('{"text": "' + "1, " * MAX_COMPLETION_TOKENS + '"}')  # not a list of ids


def test_many_lists_are_judged_each_and_refused_only_past_eight_contexts_in_all() -> None:
    lists = 4 * (MAX_INPUT_TOKENS // MAX_COMPLETION_TOKENS)
    each = MAX_INPUT_TOKENS // lists
    refuse_long_lists("\n".join([_ids(each)] * lists))  # no one list past a context
    with pytest.raises(InputError, match=r"more than 1,048,576 token ids in the input"):
        refuse_long_lists("\n".join([_ids(each)] * (lists + 1)))


@pytest.mark.parametrize("command", ["decode", "recover", "repro"])
def test_every_token_command_refuses_a_stream_longer_than_one_context(
    command: str, tmp_path: Path
) -> None:
    path = tmp_path / "ids.json"
    path.write_text(_ids(MAX_COMPLETION_TOKENS + 1))
    extra = ["-o", str(tmp_path / "bundle")] if command == "repro" else []
    result = run([command, str(path), *extra])
    assert result.exit_code == 2 and result.stdout == "", result
    assert result.stderr.startswith(
        "harmony-doctor: error: more than 131,072 token ids in one stream"
    )
    assert not (tmp_path / "bundle").exists()


def test_a_stream_found_in_a_document_is_held_to_one_context_too(tmp_path: Path) -> None:
    path = tmp_path / "response.json"
    path.write_text('{"output_token_ids": ' + _ids(MAX_COMPLETION_TOKENS + 1) + "}")
    result = run(["decode", str(path)])
    assert result.exit_code == 2 and result.stdout == ""
    assert "131,073 token ids in one stream" in result.stderr


@pytest.mark.parametrize("command", ["explain", "decode"])
def test_millions_of_ids_in_one_line_are_refused_under_the_bound(
    command: str, tmp_path: Path
) -> None:
    path = tmp_path / "ids.json"
    path.write_text(_ids(2_000_000))
    found = peak_of([command, str(path), "--format", "json"], tmp_path, hang=300)
    assert found.exit_code == 2 and found.stdout == ""
    assert found.stderr.startswith(
        "harmony-doctor: error: more than 131,072 token ids in one stream"
    )
    assert found.within_bound, str(found)
