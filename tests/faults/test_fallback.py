"""openai-harmony's exception in words no form knows is a failure (HD179), never silence; and
it is the last resort: any other form the text holds, generic or a writer's own, is read
instead, on both searches (Python's and Rust's settle alike). It reads the exception as Python
prints it, module and all: a name that only ends so, a field, a docstring, another project's
HarmonyError or a count is no openai-harmony error raised."""

from __future__ import annotations

from pathlib import Path

import pytest

import harmony_doctor as hd
from harmony_doctor.logs import extract, messages
from harmony_doctor.native import native_available


def _codes(text: str) -> list[tuple[str, int]]:
    return [(e.code, e.line) for e in extract.extract_text(text)]


@pytest.mark.parametrize(
    "message",
    [
        # openai-harmony 0.0.8's own, outside the parser and the render (its encoding.rs)
        "Invalid token for decoding: 99999999",
        "unknown encoding name: HarmonyGptOss",
        # a wording a later release may bring
        "header recipient 'functions.x' is not a declared tool",
        # its ids cut off by a log that cut the line
        "Unexpected token 12",
    ],
)
def test_an_exception_in_unknown_words_is_a_failure(message: str) -> None:
    text = f"ERROR 11-28 10:15:06 [serving_chat.py:1145] openai_harmony.HarmonyError: {message}\n"
    (error,) = extract.extract_text(text)
    assert (error.code, error.kind, error.line) == ("HD179", "unknown_error", 1)
    assert message in error.message


@pytest.mark.parametrize(
    ("message", "code"),
    [
        # openai-harmony's vocabulary loader and renderer in their own words (its source)
        ("failed to download or load vocab file", "HD171"),
        ("invalid tiktoken vocab file: No such file or directory (os error 2)", "HD171"),
        ("the env var TIKTOKEN_ENCODINGS_BASE is not set, or invalid", "HD171"),
        ("Tools should have a name!", "HD175"),
        ("token 200012 was specified as a stop token, but is not mapped", "HD175"),
        ("Encountered text corresponding to disallowed special token '<|start|>'.", "HD175"),
    ],
)
def test_openai_harmonys_own_words_outside_the_parser_have_their_codes(
    message: str, code: str
) -> None:
    assert [c for c, _ in _codes(f"openai_harmony.HarmonyError: {message}\n")] == [code]


@pytest.mark.parametrize(
    ("message", "code"),
    [
        ("Unexpected token 200002 while expecting start token 200006", "HD111"),
        ('unexpected tokens remaining in message header: Some("to=functions.a b c")', "HD102"),
        ("Unknown role: assistantanalysis", "HD122"),
        # a generic form's statement (said_unparsed) after the exception's name
        ("failed to parse model output at position 118: <|channel|>x", "HD186"),
    ],
)
def test_any_other_form_is_read_before_the_fallback(message: str, code: str) -> None:
    text = f"openai_harmony.HarmonyError: {message}"
    hit = messages.find_hit(text)
    assert hit is not None and not messages.is_fallback(hit.name)
    assert messages.find_hit_reference(text) == hit
    hits = messages.native_hits()
    if native_available():
        assert hits is not None and messages._find_settled(hits, text) == hit
    assert [c for c, _ in _codes(text + "\n")] == [code]


@pytest.mark.parametrize(
    "text",
    [
        "    except openai_harmony.HarmonyError: pass",
        "except (ValueError, openai_harmony.HarmonyError): continue",
        'raise HarmonyError("a new wording")',
        "class HarmonyError(Exception):",
        "handler for HarmonyError:",
        "catching HarmonyError and retrying",
        "errors by type: openai_harmony.HarmonyError: 3, ValueError: 1",
        "openai_harmony.HarmonyError:\t12 (0.4%)",
        # the exception not named in full (a red team's real finds, each alone on its line)
        "    VowelHarmonyError: If vowel harmony validation fails",
        "  harmonyError: string | null;",
        "HarmonyError::NegotiationNotConfigured => {} // Expected",
        'logger.warning("HarmonyError: %s", e)',
        "        HarmonyError: When parsing fails (only Harmony models) - NOT caught",
        "Error breakdown: HarmonyError: none, TimeoutError: none",
        "Root cause of the HarmonyError: the client dropped the tool_calls array",
        "[custom_components.harmony_hub.client] HarmonyError: Can't reach the Harmony hub",
        "my_openai_harmony.HarmonyError: not this one",
    ],
)
def test_the_exception_named_but_not_raised_is_no_failure(text: str) -> None:
    assert extract.extract_text(f"{text}\n") == ()


def test_a_wrap_that_breaks_a_known_form_is_read_as_that_form() -> None:
    text = (
        "openai_harmony.HarmonyError: unexpected tokens remaining in mes\n"
        'sage header: Some("to=functions.a b c")\n'
    )
    (error,) = extract.extract_text(text)
    assert (error.code, error.span) == ("HD102", (1, 2))


def test_the_line_after_the_fallback_is_read_on_its_own() -> None:
    text = (
        "openai_harmony.HarmonyError: unknown encoding name: HarmonyGptOss\n"
        "openai_harmony.HarmonyError: Unexpected token 200002 while expecting start token 200006\n"
        "the run went on\n"
    )
    assert _codes(text) == [("HD179", 1), ("HD111", 2)]
    (first, _) = extract.extract_text(text)
    assert first.span == (1, 1) and first.message.endswith("unknown encoding name: HarmonyGptOss")


@pytest.mark.parametrize("native", [True, False])
def test_scan_counts_it_on_both_cores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, native: bool
) -> None:
    if native and not native_available():
        pytest.skip("the Rust core is not built here")
    monkeypatch.setenv("HARMONY_DOCTOR_NATIVE", "1" if native else "0")
    path = tmp_path / "server.log"
    path.write_text(
        "INFO 11-28 10:15:05 [api.py:1] started\n"
        "ERROR 11-28 10:15:06 [serving_chat.py:1145] openai_harmony.HarmonyError: "
        "Invalid token for decoding: 99999999\n"
        "INFO 11-28 10:15:07 [api.py:1] next\n"
    )
    found = hd.scan_file(path)
    assert [(e.code, e.line) for e in found.events] == [("HD179", 2)]
    assert found.report.status == "ok" and found.report.failures == 1
