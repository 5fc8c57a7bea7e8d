"""evidence/ids.py: token ids under any key or none, judged by Harmony's special ids."""

from __future__ import annotations

import pytest

from harmony_doctor.evidence.ids import id_runs

STREAM = "200005, 35644, 200008, 976, 1825, 200007"


@pytest.mark.parametrize(
    ("text", "key"),
    [
        (f"DEBUG rid=1 output_ids=[{STREAM}] done", "output_ids"),
        (f"gen tokens: {STREAM.replace(',', '')}", "tokens"),
        (f"tensor([{STREAM}], device='cuda:0')", "tensor"),
        (f"[{STREAM}]", None),
        (f"sampled = ({STREAM})", "sampled"),
    ],
)
def test_a_run_of_ids_with_harmony_tokens_is_read_under_any_key_or_none(
    text: str, key: str | None
) -> None:
    (run,) = id_runs(text)
    assert run.ids == (200005, 35644, 200008, 976, 1825, 200007)
    assert run.key == key or (key == "tensor" and run.key in ("tensor", None))
    assert run.line == 1


def test_a_bracketed_run_over_several_lines_is_one_run() -> None:
    (run,) = id_runs("head\nids = [200005, 35644,\n  200008, 976,\n  200007]\n")
    assert run.ids == (200005, 35644, 200008, 976, 200007) and run.line == 2


@pytest.mark.parametrize(
    "text",
    [
        "listening on ports: 8000, 8001, 8002, 8003",
        "tensor shape: (1, 4096, 2880) dims = [4096, 2880, 64, 8]",
        "eos_token_ids = [199999, 200002, 200012, 200007]",
        "stop: [200002, 200012, 200007, 200012]",
        "load: control token: 200012 200002 200006 200008 is not marked as EOG",
        "timestamps [1756216788, 1756216789, 1756216790, 1756216791]",
        "[200005, 200008, 200007]",
    ],
)
def test_ports_sizes_stop_lists_and_listings_stay_quiet(text: str) -> None:
    assert tuple(id_runs(text)) == ()


def test_the_key_says_a_prompt_and_an_ellipsis_a_cut() -> None:
    (run,) = id_runs("prompt_token_ids: [200006, 17360, 200008, 976, 200007, 200006] ...")
    assert run.prompt
    (cut,) = id_runs(f"out = [{STREAM}, ...]")
    assert cut.elided and not cut.prompt


def test_runs_are_read_a_line_at_a_time_in_order_and_once_per_line() -> None:
    """Ids shown twice on a line are one run, its bracketed reading kept (its key); the same ids
    on the next line are a run of their own; runs come as they are read."""
    ids = "200005, 35644, 200008, 976, 200007"
    runs = id_runs(f"out ids: {ids.replace(',', '')} again [{ids}]\nnext [{ids}]\n")
    assert not isinstance(runs, tuple)  # read lazily: nothing held for lines already given
    assert [(r.line, r.key) for r in runs] == [(1, "again"), (2, "next")]
