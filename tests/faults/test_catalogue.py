"""faults/catalogue.py: every failure form is one entry, and every reader takes it from there."""

from __future__ import annotations

import re
from typing import get_args

import pytest

from harmony_doctor.faults import catalogue
from harmony_doctor.faults.catalogue import FORMS, MESSAGE_FORMS, Form
from harmony_doctor.faults.rules import RULES
from harmony_doctor.logs import messages
from harmony_doctor.logs.extract import extract_text
from harmony_doctor.models import Kind
from harmony_doctor.scan import core

IDS = [f.name for f in FORMS]
KINDS = {k for part in get_args(Kind) for k in get_args(part)}
MESSAGE_IDS = [f.name for f in MESSAGE_FORMS]


def test_every_form_name_is_declared_once() -> None:
    assert len(set(IDS)) == len(IDS)
    assert all(re.fullmatch(r"[a-z][a-z0-9_]*", name) for name in IDS)


@pytest.mark.parametrize("form", FORMS, ids=IDS)
def test_a_form_has_a_real_example_and_a_known_kind(form: Form) -> None:
    assert form.examples, "a form is added with a real text it recognises"
    assert form.kind in KINDS
    assert form.writers


@pytest.mark.parametrize("form", FORMS, ids=IDS)
def test_a_fixed_code_is_a_rule_of_the_same_kind(form: Form) -> None:
    if form.code is None:
        assert catalogue.is_parser_kind(form.kind), "only parser kinds are classified"
        return
    assert form.code in RULES
    assert RULES[form.code].kind == form.kind


@pytest.mark.parametrize("form", MESSAGE_FORMS, ids=MESSAGE_IDS)
def test_examples_are_recognised_by_pattern_anchor_and_keyword(form: Form) -> None:
    assert form.pattern is not None and form.anchors and form.keywords
    for example in form.examples:
        assert re.search(form.pattern, example, re.I), example
        assert any(anchor in example.encode() for anchor in form.anchors), example
        assert any(word in example.lower() for word in form.keywords), example
        assert core.is_hit(example.encode()), "the byte scan finds the line"


@pytest.mark.parametrize("form", MESSAGE_FORMS, ids=MESSAGE_IDS)
def test_each_example_without_its_blanks_still_holds_a_keyword(form: Form) -> None:
    """The forms' patterns take any blanks between words (`\\s*`), none too, so a keyword is
    a run of one word: `ran out` let `ran\\tout of tokens` and `ranoutoftokens` past the
    keyword gate while the pattern matched them (found by the property test of the Rust
    search against the reference)."""
    for example in form.examples:
        squeezed = re.sub(r"\s+", "", example)
        if re.search(form.pattern or "", squeezed, re.I):
            assert any(word in squeezed.lower() for word in form.keywords), squeezed
        assert messages.find_hit(squeezed) == messages.find_hit_reference(squeezed), squeezed


@pytest.mark.parametrize("form", MESSAGE_FORMS, ids=MESSAGE_IDS)
def test_the_log_reader_names_the_form_of_each_example(form: Form) -> None:
    for example in form.examples:
        hit = messages.find_hit(example)
        assert hit is not None and hit.name == form.name, example
        found = extract_text(f"ERROR {example}\n")
        assert [e.kind for e in found] == [form.kind], example
        if form.code is not None:
            assert [e.code for e in found] == [form.code]
        if form.server is not None:
            assert [e.server for e in found] == [form.server]


def test_openai_harmony_messages_map_to_their_parser_kind() -> None:
    for form in MESSAGE_FORMS:
        for example in form.examples:
            expected = (
                form.kind
                if form.origin == "openai-harmony" and catalogue.is_parser_kind(form.kind)
                else None
            )
            assert catalogue.kind_of_error(example) == expected, example


def test_scan_anchors_are_the_catalogue_anchors_once_each() -> None:
    assert core.ERROR_ANCHORS is catalogue.ERROR_ANCHORS
    anchors = catalogue.ERROR_ANCHORS
    assert len(set(anchors)) == len(anchors) and all(anchors)
    assert set(anchors) == {
        *catalogue.EXCEPTION_ANCHORS,
        *(a for f in FORMS for a in f.anchors),
    }


def test_a_line_without_keywords_is_rejected_before_any_pattern_runs() -> None:
    assert not messages.holds_message("INFO 200 OK: served the request in 12 ms")
    assert all(word == word.lower() for word in catalogue.KEYWORDS)


def test_quoting_kinds_are_kinds() -> None:
    assert catalogue.QUOTING_KINDS <= KINDS


def test_forms_are_tried_by_rank_and_the_fallback_last() -> None:
    """The Rust search relies on it: where the fallback matches first, no other form can match
    at or before its start, so searching on after it finds what Python's `_hit` reads."""
    ranks = [f.rank for f in MESSAGE_FORMS if f.pattern]
    assert ranks == sorted(ranks) and ranks[-1] == 2 and ranks.count(2) == 1
    assert all(f.generic for f in MESSAGE_FORMS if f.fallback)


def test_ollamas_gpt_oss_template_crash_on_a_tools_types_is_its_own_render_error() -> None:
    # as LangChain's ChatOllama prints it, and as a client quotes Ollama's JSON error body
    said = (
        'ollama._types.ResponseError: template: :108:130: executing "" at <index $prop.Type '
        "0>: error calling index: reflect: slice index out of range (status code: 500)\n"
    )
    body = (
        'Ollama API error: [500] {"error":"template: :108:130: executing \\"\\" at '
        "\\u003cindex $prop.Type 0\\u003e: error calling index: reflect: slice index out of "
        'range"}\n'
    )
    for text in (said, body):
        assert [(e.code, e.server) for e in extract_text(text)] == [("HD178", "ollama")]
    # another model's template failing is no gpt-oss render error
    other = 'Error: template: :7:3: executing "" at <.Response>: can\'t evaluate field Response\n'
    assert extract_text(other) == ()
