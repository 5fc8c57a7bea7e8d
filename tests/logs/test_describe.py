"""describe.py: the rule, releases, server and evidence each finding is given."""

from __future__ import annotations

from dataclasses import replace

import pytest

from harmony_doctor.faults.catalogue import FORM, Form
from harmony_doctor.faults.rules import Rule
from harmony_doctor.logs import describe, extract_text, recall
from harmony_doctor.logs.messages import MessageHit, find_hit
from tests.logs.helpers import HARMONY_INIT, LEFTOVER_LIST, LEFTOVER_SOME, only, traceback_lines


def test_message_forms_across_versions() -> None:
    old = only(
        "HarmonyError: Could not parse header: too many tokens remaining after extracting "
        "content-type and recipient"
    )
    assert (old.kind, old.harmony_version, old.header_words) == ("header_leftover", "0.0.1", ())
    listed = only(f"HarmonyError: {LEFTOVER_LIST}")
    assert listed.harmony_version == "0.0.1-0.0.4"
    some = only(f"HarmonyError: {LEFTOVER_SOME}")
    assert some.harmony_version == ">=0.0.5"
    literal = only("HarmonyError('Unexpected token N while expecting start token 200006')")
    assert (literal.token, literal.code) == (None, "HD114")


def test_load_and_render_failures() -> None:
    text = "\n".join(
        [
            "Traceback (most recent call last):",
            '  File "/app/server.py", line 9, in <module>',
            "    enc = load_harmony_encoding(HarmonyEncodingName.HARMONY_GPT_OSS)",
            f'  File "{HARMONY_INIT}", line 674, in load_harmony_encoding',
            "    inner: _PyHarmonyEncoding = _load_harmony_encoding(name)",
            "                                ~~~~~~~~~~~~~~~~~~~~~~^^^^^^",
            "openai_harmony.HarmonyError: error downloading or loading vocab file: "
            "request timed out",
            "",
            "ERROR:root:render failed: invalid conversation JSON: missing field `role` at line 1",
        ]
    )
    vocab, render = extract_text(text)
    assert (vocab.code, vocab.harmony_version, vocab.span) == ("HD171", "0.0.2", (1, 7))
    assert vocab.message.endswith("request timed out")
    assert (render.code, render.kind, render.line) == ("HD175", "render_error", 9)


def test_other_engines() -> None:
    text = "\n".join(
        [
            "Mar 14 08:09:10 box ollama[77]: time=2026-03-14T08:09:10Z level=ERROR "
            'source=routes.go:1 msg="error parsing tool call: raw=\'{\\"q\\": 1\', '
            'err=unexpected end of JSON input"',
            "2026-03-14 08:09:11 [ERROR]",
            "Failed to parse tool call: Unexpected end of content",
            "Model Output: <|channel|>commentary to=functions.f<|message|>{",
            'srv  send_error: {"code":500,"message":"Failed to parse input at pos 7: '
            '<|channel|>final?"}',
        ]
    )
    ollama, lmstudio, llamacpp = extract_text(text)
    assert (ollama.code, ollama.server, ollama.pid, ollama.context) == (
        "HD181",
        "ollama",
        77,
        '{"q": 1',
    )
    assert (lmstudio.code, lmstudio.line, lmstudio.server) == ("HD182", 3, "lmstudio")
    assert lmstudio.timestamp == "2026-03-14 08:09:11"
    assert lmstudio.context == "<|channel|>commentary to=functions.f<|message|>{"
    assert (llamacpp.code, llamacpp.kind, llamacpp.server) == ("HD183", "input_parse", "llama.cpp")


def test_a_recurring_hit_is_worded_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A failure that recurs is the same hit: its rule and expected/found are worked out once,
    and every record of it is what a first reading gives."""
    error = "Unexpected token 200002 while expecting start token 200006"
    api = "(APIServer pid=11) ERROR 03-14 08:09:{:02} [serving.py:830] "
    one = "\n".join(api.format(1) + line for line in traceback_lines(error))
    first = only(one)
    ruled: list[str] = []
    real = describe._rule_for

    def rule_for(hit: MessageHit, form: Form) -> Rule:
        ruled.append(hit.message)
        return real(hit, form)

    monkeypatch.setattr(describe, "_rule_for", rule_for)
    three = "\n".join(
        api.format(second) + line for second in (2, 3, 4) for line in traceback_lines(error)
    )
    errors = extract_text(three)
    assert ruled == [error]
    assert [(e.code, e.expected, e.found) for e in errors] == [
        (first.code, first.expected, first.found)
    ] * 3
    long = (recall.MAX_TEXT + 1) * "x"
    found = find_hit(error)
    assert found is not None
    hit = replace(found, message=long)
    known: describe.Worded = recall.Recent()
    describe._worded(hit, FORM[hit.name], known)
    describe._worded(hit, FORM[hit.name], known)
    assert known == {}
    assert ruled == [error, long, long]  # too long to keep
