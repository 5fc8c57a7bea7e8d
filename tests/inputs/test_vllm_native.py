"""The Rust reading of vLLM `Generated response` lines equals tokens.py's parse_vllm_line."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harmony_doctor import native as accel
from harmony_doctor.errors import InputError
from harmony_doctor.harmony.vocab import VOCAB_SIZE
from harmony_doctor.inputs.log_words import completion_words
from harmony_doctor.inputs.vllm_requests import VllmRecord, parse_vllm_bytes, parse_vllm_line

native = accel.native_module()
needs_native = pytest.mark.skipif(native is None, reason="the Rust extension is not built")
# the Rust reader of `Generated response` lines, made of their words as the package makes it
completions = None if native is None else native.Completions(**completion_words())

COMMON = (
    b"(APIServer pid=1000) INFO 11-01 00:00:00 [logger.py:71] Generated response "
    b"chatcmpl-00000000: output: 'analysis...', output_token_ids: [200005, 35644, 200008, 1844, "
    b"200002], finish_reason: stop"
)


def reference(raw: bytes, number: int = 7) -> VllmRecord | str | None:
    """parse_vllm_line's answer for the decoded line, its error message when it raises."""
    try:
        return parse_vllm_line(raw.decode("utf-8", "replace"), number)
    except InputError as exc:
        return f"InputError: {exc}"


def through_bytes(raw: bytes, number: int = 7, use: bool | None = None) -> VllmRecord | str | None:
    try:
        return parse_vllm_bytes(raw, number, use)
    except InputError as exc:
        return f"InputError: {exc}"


# -- lines built from pieces near (and not quite) the common shape ------------------------------

PREFIXES = [
    "(APIServer pid=1000) INFO 11-01 00:00:00 [logger.py:71] ",
    "",
    "INFO 11-01 00:00:00 [logger.py:71] ",
    "(APIServer pid=7) INFO 11-01 00:00:00 [logger.py:71] Received request x: ",
    "\ufeffé ",
]
MARKERS = [
    "Generated response ",
    "Generated response",
    "Generated  response ",
    "generated response ",
    "Received request ",
    "Generated response Generated response ",
]
ID_CHARS = "abc-019_:. \t\xa0é\u2028\x1c/("
COMMON_IDS = ["chatcmpl-00000000", "cmpl-7f3a9c-0", "chatcmpl-abc_1.2/3", "r"]
MODES = [
    "",
    " (streaming delta)",
    " (streaming complete)",
    " (streaming other)",
    "(streaming delta)",
]
OUTPUT_TEXT = [
    "",
    "output: 'analysis...', ",
    "output: 'é\u00a0ü 日本', ",
    "output: 'output_token_ids: [1, 2]', ",
    "output: 'finish_reason: length', ",
    'output: "it\'s", ',
]
KEYS = ["output_token_ids", "prompt_token_ids", "output_token_idsx", "token_ids", "output_token_id"]
JOINERS = [": ", "=", " := ", ":", "", ":\t", ": \xa0"]
SEPARATORS = [", ", ",", " ", " ,  ", ",\t", "\t", ", ,"]
CLOSERS = ["]", "", "]x]", " ]", ",]", ")"]
FINISH_KEYS = [", finish_reason", "", " finish_reason", ", finish_reasons"]
FINISH_JOINERS = [":", "=", " :", "", ":="]
SPACES = [" ", "", "\t", "\xa0", "\u3000", "\x1c", "  "]
QUOTES = ["", "'"]
REASONS = ["stop", "length", "None", "streaming_complete", "stöp", "é", "", "abort_1", "\u0661"]
TAILS = ["", "é", ", x", "\r", "\n", " é", "'"]


def usually(options: list[str]) -> st.SearchStrategy[str]:
    """The first (common) option half of the time, any option otherwise."""
    return st.just(options[0]) | st.sampled_from(options)


def id_text(value: int, style: str) -> str:
    if style == "padded":
        return f"{value:010d}"
    if style == "negative":
        return f"-{value}"
    if style == "unicode":
        return str(value).translate(str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩"))
    return str(value)


id_values = st.integers(0, VOCAB_SIZE - 1) | st.integers(VOCAB_SIZE - 3, 10**11)
plain_ids = st.integers(0, VOCAB_SIZE - 1).map(str)
id_items = (
    plain_ids
    | plain_ids
    | plain_ids
    | st.tuples(id_values, st.sampled_from(["plain", "padded", "negative", "unicode"])).map(
        lambda t: id_text(*t)
    )
)
id_lists = st.one_of(
    st.just("None"),
    st.just("Nonesuch"),
    st.builds(
        lambda items, sep, close: "[" + sep.join(items) + close,
        st.lists(id_items, max_size=8),
        usually(SEPARATORS),
        usually(CLOSERS),
    ),
)
request_ids = st.sampled_from(COMMON_IDS) | st.text(st.sampled_from(ID_CHARS), max_size=10)
finishes = st.builds(
    "".join,
    st.tuples(
        usually(FINISH_KEYS),
        usually(FINISH_JOINERS),
        usually(SPACES),
        usually(QUOTES),
        usually(REASONS),
        usually(QUOTES),
        usually(TAILS),
    ),
)
pieced_lines = st.builds(
    "".join,
    st.tuples(
        usually(PREFIXES),
        usually(MARKERS),
        request_ids,
        usually(MODES),
        usually([": ", ":", " : ", ""]),
        usually(OUTPUT_TEXT),
        usually(KEYS),
        usually(JOINERS),
        id_lists,
        finishes,
    ),
).map(lambda text: text.encode("utf-8"))


def damaged(raw: bytes, junk: bytes, at: int) -> bytes:
    """`raw` with `junk` (often invalid UTF-8) put in somewhere."""
    at %= len(raw) + 1
    return raw[:at] + junk + raw[at:]


junk_bytes = st.sampled_from([b"\xff", b"\xc3", b"\xe2\x80", b"\xc2\xa0", b"\x85", b"\x00"])
lines = (
    pieced_lines
    | st.builds(damaged, pieced_lines, junk_bytes | st.binary(max_size=4), st.integers(0, 400))
    | st.binary(max_size=300)
    | st.builds(bytes.__add__, st.just(b"Generated response r: output_token_ids: ["), st.binary())
)


@needs_native
@settings(max_examples=4000, deadline=None)
@given(lines, st.integers(1, 10**6))
def test_native_reading_equals_parse_vllm_line(raw: bytes, number: int) -> None:
    """Whatever the extension answers is Python's answer: the same record, or the same error
    when Python raises (the extension then hands the line over)."""
    assert completions is not None
    expected = reference(raw, number)
    found = completions.output_line(raw, VOCAB_SIZE)
    if found is not None:
        assert isinstance(expected, VllmRecord), (raw, expected)
    assert through_bytes(raw, number, True) == expected


# -- the common shapes take the native path ------------------------------------------------------

common_lines = st.builds(
    lambda prefix, rid, mode, text, ids, sep, finish: (
        f"{prefix}Generated response {rid}{mode}: {text}output_token_ids: "
        f"{'None' if ids is None else '[' + sep.join(map(str, ids)) + ']'}{finish}"
    ).encode(),
    st.sampled_from(PREFIXES),
    st.sampled_from(COMMON_IDS),
    st.sampled_from(MODES[:3]),
    st.sampled_from(OUTPUT_TEXT),
    st.none() | st.lists(st.integers(0, VOCAB_SIZE - 1), max_size=20),
    st.sampled_from([", ", ","]),
    st.sampled_from(
        [
            ", finish_reason: stop",
            ", finish_reason=length",
            ", finish_reason: 'stop'",
            ", finish_reason: None",
            ", finish_reason: streaming_complete",
            "",
            ", finish_reason: stop\r",
        ]
    ),
)


@needs_native
@settings(max_examples=1000, deadline=None)
@given(common_lines)
def test_common_generated_lines_take_the_native_path(raw: bytes) -> None:
    """Every common line is read by the extension (else the test above proves nothing)."""
    assert completions is not None
    found = completions.output_line(raw, VOCAB_SIZE)
    assert found is not None, raw
    expected = reference(raw)
    assert isinstance(expected, VllmRecord)
    assert (found.request_id, found.complete, found.delta, found.finish_reason) == (
        expected.request_id,
        expected.kind == "complete",
        expected.delta,
        expected.finish_reason,
    )
    assert found.ids == expected.ids
    assert parse_vllm_bytes(raw, 7, True) == expected


@needs_native
@pytest.mark.parametrize(
    ("raw", "taken"),
    [
        (COMMON, True),
        (COMMON.replace(b"[200005", b"[-200005"), False),  # Python names the bad token
        (COMMON.replace(b"1844", b"0000001844"), False),
        (COMMON.replace(b"200002]", b"200002"), False),  # cut by --max-log-len: Python notes it
        (COMMON.replace(b"200002", b"201088"), False),  # openai-harmony's table decides
        (COMMON.replace(b"chatcmpl-", "chatcmpl-é".encode()), False),
        (COMMON.replace(b": stop", ": stöp".encode()), False),
        (COMMON.replace(b": stop", b":\xc2\xa0stop"), False),  # U+00A0 is \s in Python
        (COMMON.replace(b"analysis", b"\xff\xfe"), True),  # replaced in the text only
        (b"Received request r: prompt_token_ids: [1, 2]", False),
    ],
)
def test_doubtful_lines_are_left_to_python(raw: bytes, taken: bool) -> None:
    assert completions is not None
    assert (completions.output_line(raw, VOCAB_SIZE) is not None) == taken
    assert through_bytes(raw, 3, True) == reference(raw, 3)


# -- the fallback ---------------------------------------------------------------------------------


def test_python_path_when_native_is_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """HARMONY_DOCTOR_NATIVE=0 (or native=False) never consults the extension."""

    def no_native() -> None:
        raise AssertionError("the extension was consulted")

    monkeypatch.setenv(accel.NATIVE_ENV, "0")
    monkeypatch.setattr(accel, "native_module", no_native)
    expected = reference(COMMON)
    assert isinstance(expected, VllmRecord) and expected.finish_reason == "stop"
    assert parse_vllm_bytes(COMMON, 7) == expected
    assert parse_vllm_bytes(COMMON, 7, False) == expected
    bad = COMMON.replace(b"[200005", b"[-200005")
    with pytest.raises(InputError, match="line 7"):
        parse_vllm_bytes(bad, 7)


def test_python_path_when_the_extension_is_not_built(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(accel.NATIVE_ENV, raising=False)
    monkeypatch.setattr(accel, "native_module", lambda: None)
    assert parse_vllm_bytes(COMMON, 7, True) == reference(COMMON)
    assert parse_vllm_bytes(b"no ids here", 7) is None


@pytest.mark.parametrize(
    ("raw", "column"),
    [
        (b"Generated response r: output_token_ids: [1, -, 2]", 45),
        (b"Generated response r: output_token_ids: [1 -]", 44),
    ],
)
def test_a_lone_minus_sign_is_an_input_error_not_a_crash(raw: bytes, column: int) -> None:
    """A sign without digits was the only stray text Python's error path could not place
    (StopIteration escaped); it is named like any other unexpected character."""
    with pytest.raises(InputError, match=f"unexpected '-' at line 4, column {column}"):
        parse_vllm_line(raw.decode(), 4)
    assert through_bytes(raw, 4) == reference(raw, 4)
