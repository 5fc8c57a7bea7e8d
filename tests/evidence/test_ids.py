"""evidence/ids.py: token ids under any key or none, judged by Harmony's special ids."""

from __future__ import annotations

import pytest

from harmony_doctor.evidence.ids import id_runs, parses_its_prompt
from harmony_doctor.harmony.vocab import START

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


RENDER_THEN_PARSE = """tokens = enc.render_conversation_for_completion(convo, Role.ASSISTANT)
parsed = enc.parse_messages_from_completion_tokens(tokens, role=Role.ASSISTANT)
"""
GENERATE_THEN_PARSE = """prefill = enc.render_conversation_for_completion(convo, Role.ASSISTANT)
out = llm.generate(prompt_token_ids=[prefill])
parsed = enc.parse_messages_from_completion_tokens(out[0].outputs[0].token_ids, Role.ASSISTANT)
"""
SYSTEM, ASSISTANT = 17360, 173781


def _system() -> frozenset[int]:
    return frozenset({SYSTEM})


def test_code_parsing_the_prompt_it_rendered_is_a_prompt_parsed() -> None:
    assert parses_its_prompt(RENDER_THEN_PARSE, _system, START)
    assert not parses_its_prompt(GENERATE_THEN_PARSE, _system, START)


def test_ids_opening_with_a_callers_header_are_a_prompt_parsed() -> None:
    prompt = f"[{START}, {SYSTEM}, 200008, 3575, 553, 200007, {START}, {ASSISTANT}]"
    completion = f"[200005, 35644, 200008, 3575, 553, 200007, {START}, {ASSISTANT}]"
    assert parses_its_prompt(f"tokens: {prompt}", _system, START)
    assert not parses_its_prompt(f"tokens: {completion}", _system, START)
