"""Ablation: every engine form removed in turn, its real examples are still found.

An engine form adds what only its engine knows (the engine, its versions, its fix, its
threads); finding the failure must not depend on it. With the form taken out of the catalogue,
the statement its example makes in the grammar's terms (faults/generic.py) still finds it, with
the generic code of that fault, on the same line; and the byte scan still reads the line.
"""

from __future__ import annotations

import pytest

from harmony_doctor.faults.catalogue import MESSAGE_FORMS, Form
from harmony_doctor.logs import extract, messages

# The generic code of the fault each engine form's examples state; None: the examples state no
# fault in the grammar's terms (a template's own crash), so without their form nothing is found.
GENERIC_CODE: dict[str, str | None] = {
    "ollama_tool": "HD180",
    "lmstudio_tool": "HD180",
    "llamacpp_arguments": "HD180",
    "provider_tool_args": "HD180",
    "ollama_unmapped_tool": "HD207",
    "llamacpp_input": "HD186",
    "llamacpp_end_of_input": "HD186",
    "llamacpp_peg": "HD186",
    "recovered_raw": "HD176",
    "trtllm_raw_fallback": "HD176",
    "template_content": "HD184",
    "template_thinking": "HD188",
    "vllm_unknown_recipient": "HD194",
    "vllm_two_messages": "HD194",
    "vllm_preamble": "HD194",
    "vllm_unknown_channel": "HD194",
    "sglang_structure_info": "HD194",
    "ollama_template_tools": None,
}
ENGINE_FORMS = [f for f in MESSAGE_FORMS if f.origin == "server" and not f.generic]
GENERIC_ANCHORS = tuple(a for f in MESSAGE_FORMS if f.generic for a in f.anchors)


def test_every_engine_form_has_its_generic_code() -> None:
    assert {f.name for f in ENGINE_FORMS} == set(GENERIC_CODE)


@pytest.fixture
def without(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """Take one form out of the log reader (Python's search; the Rust one is built once)."""

    def remove(form: Form) -> None:
        monkeypatch.setattr(
            messages, "_FORMS", tuple(f for f in messages._FORMS if f[0] != form.name)
        )
        monkeypatch.setattr(
            messages, "_FORM_WORDS", tuple(f for f in messages._FORM_WORDS if f[0] != form.name)
        )
        monkeypatch.setattr(messages, "_FORMS_WITH", {})
        monkeypatch.setattr(extract, "hit_finder", lambda: messages.find_hit)
        monkeypatch.setattr(extract, "first_pass", lambda: None)

    return remove


@pytest.mark.parametrize("form", ENGINE_FORMS, ids=[f.name for f in ENGINE_FORMS])
def test_an_engine_forms_example_is_found_without_it(form: Form, without) -> None:  # type: ignore[no-untyped-def]
    without(form)
    for example in form.examples:
        text = f"INFO 10-01 12:00:00 request started\nERROR {example}\n"
        found = extract.extract_text(text)
        code = GENERIC_CODE[form.name]
        if code is None:
            assert found == (), example
            continue
        assert [(e.line, e.code) for e in found] == [(2, code)], example
        assert any(anchor in example.encode() for anchor in GENERIC_ANCHORS), example


@pytest.mark.parametrize("form", ENGINE_FORMS, ids=[f.name for f in ENGINE_FORMS])
def test_with_the_engine_form_its_own_code_wins(form: Form) -> None:
    for example in form.examples:
        found = extract.extract_text(f"ERROR {example}\n")
        assert [e.code for e in found] != [] and found[0].kind == form.kind, example
        hit = messages.find_hit(example)
        assert hit is not None and hit.name == form.name


@pytest.mark.parametrize(
    "text",
    [
        "Invalid role: tool",
        "unexpected end of stream while reading header",
        "Unexpected end of JSON input",
        "Unexpected token } in JSON at position 12",
        "expected 3 but got 4",
        "Unknown tool: search",
        "the response was cut at the end of input",
    ],
)
def test_the_generic_forms_stay_quiet_on_look_alikes(text: str) -> None:
    assert extract.extract_text(f"ERROR {text}\n") == ()
