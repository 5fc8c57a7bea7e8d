"""ingest.py: every token-id input shape, and clear errors naming the position."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harmony_doctor.errors import InputError
from harmony_doctor.harmony.vocab import Vocab
from harmony_doctor.inputs.token_sniff import detect_format
from harmony_doctor.inputs.tokens import parse_tokens
from harmony_doctor.models import TokenInput


def parse(text: str, vocab: Vocab, fmt: str = "auto", request: str | None = None) -> TokenInput:
    return parse_tokens(text, vocab.encode, fmt, request)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "fmt"),
    [
        ("[200005, 35644, 200008]", "json-array"),
        ("200005 35644 200008", "ids"),
        ("200005,35644,200008", "ids"),
        ("200005, 35644,\n200008\n", "ids"),
        ("(200005, 35644, 200008)", "ids"),
        ("[200005, 35644, 200008,]", "ids"),
    ],
)
def test_plain_id_lists(text: str, fmt: str, vocab: Vocab) -> None:
    inp = parse(text, vocab)
    assert inp.tokens == (200005, 35644, 200008)
    assert inp.format == fmt
    assert inp.detected == "tokens"


def test_cut_python_list_is_read_and_marked(vocab: Vocab) -> None:
    inp = parse("[200005, 35644, 200008, 3686", vocab)
    assert inp.tokens == (200005, 35644, 200008, 3686)


@pytest.mark.parametrize(
    "key", ["token_ids", "output_token_ids", "output_ids", "completion_token_ids"]
)
def test_json_document_output_keys(key: str, vocab: Vocab) -> None:
    doc = {"id": "r1", "meta": {"x": 1}, "result": {key: [200005, 17196, 200008, 525, 200002]}}
    inp = parse(json.dumps(doc), vocab)
    assert inp.tokens == (200005, 17196, 200008, 525, 200002)
    assert inp.request_id == "r1"


def test_vllm_return_token_ids_response(vocab: Vocab) -> None:
    doc = {
        "id": "chatcmpl-1",
        "prompt_token_ids": [200006, 1428, 200008, 3686, 200007, 200006, 173781],
        "choices": [
            {"index": 0, "finish_reason": "stop", "token_ids": [200005, 17196, 200008, 525, 200002]}
        ],
    }
    inp = parse(json.dumps(doc), vocab)
    assert inp.tokens == (200005, 17196, 200008, 525, 200002)
    assert inp.prompt_tokens == (200006, 1428, 200008, 3686, 200007, 200006, 173781)
    assert inp.finish_reason == "stop"
    assert not inp.truncated


def test_logprob_token_id_entries_skip_top_logprobs(vocab: Vocab) -> None:
    content = [
        {
            "token": f"token_id:{t}",
            "logprob": -0.1,
            "top_logprobs": [{"token": "token_id:5", "logprob": -3}],
        }
        for t in (200005, 17196, 200008, 525)
    ]
    doc = {"id": "x", "choices": [{"index": 0, "logprobs": {"content": content}}]}
    assert parse(json.dumps(doc), vocab).tokens == (200005, 17196, 200008, 525)


def test_jsonl_stream_chunks_are_joined(vocab: Vocab) -> None:
    chunks = [[200005, 17196], [200008], [525, 200002]]
    lines = [json.dumps({"id": "c1", "choices": [{"index": 0, "token_ids": c}]}) for c in chunks]
    inp = parse("\n".join(lines) + "\n", vocab)
    assert inp.tokens == (200005, 17196, 200008, 525, 200002)
    assert inp.format == "jsonl"


def test_server_sent_events(vocab: Vocab) -> None:
    events = [
        f"data: {json.dumps({'id': 'c1', 'choices': [{'index': 0, 'token_ids': [t]}]})}"
        for t in (200005, 17196)
    ]
    inp = parse("\n\n".join([*events, "data: [DONE]"]), vocab)
    assert inp.tokens == (200005, 17196)


def test_several_responses_need_request(vocab: Vocab) -> None:
    lines = [json.dumps({"id": rid, "token_ids": [1, 2]}) for rid in ("a", "b")]
    with pytest.raises(InputError, match="choose one with --request"):
        parse("\n".join(lines), vocab)
    assert parse("\n".join(lines), vocab, request="b").request_id == "b"
    with pytest.raises(InputError, match="no request 'c'"):
        parse("\n".join(lines), vocab, request="c")


LOG = (
    "(APIServer pid=7) INFO 11-28 10:00:01 [logger.py:71] Request cmpl-9 details: prompt: "
    "'<|start|>user', prompt_token_ids: [200006, 1428, 200008], params: SamplingParams(n=1)\n"
    "(APIServer pid=7) INFO 11-28 10:00:02 [logger.py:88] Generated response cmpl-9 (streaming delta): "
    "output: 'final', output_token_ids: [200005, 17196], finish_reason: None\n"
    "(APIServer pid=7) INFO 11-28 10:00:02 [logger.py:88] Generated response cmpl-9 (streaming delta): "
    "output: 'x, output_token_ids: [1]', output_token_ids: [200008, 525], finish_reason: None\n"
    "(APIServer pid=7) INFO 11-28 10:00:03 [logger.py:88] Generated response cmpl-9 (streaming delta): "
    "output: '', output_token_ids: [200002], finish_reason: stop\n"
    "(APIServer pid=7) INFO 11-28 10:00:03 [logger.py:88] Generated response cmpl-9 (streaming complete): "
    "output: 'finalok', output_token_ids: None, finish_reason: streaming_complete\n"
)


def test_vllm_streaming_deltas_joined_in_order(vocab: Vocab) -> None:
    inp = parse(LOG, vocab)
    assert inp.detected == "log" and inp.format == "vllm-log"
    assert inp.tokens == (200005, 17196, 200008, 525, 200002)
    assert inp.prompt_tokens == (200006, 1428, 200008)
    assert inp.request_id == "cmpl-9"
    assert inp.finish_reason == "stop"
    assert not inp.truncated


def test_vllm_details_line_and_cut_list(vocab: Vocab) -> None:
    line = (
        "INFO 11-28 10:00:02 [logger.py:88] Generated response cmpl-2 details: output: 'x', "
        "output_token_ids: [200005, 35644, 200008, 3686], finish_reason: stop\n"
    )
    inp = parse(line, vocab)
    assert inp.tokens == (200005, 35644, 200008, 3686)
    assert inp.truncated
    assert any("probably cut" in n for n in inp.notes)


def test_vllm_line_cut_mid_list(vocab: Vocab) -> None:
    line = "Generated response r: output: 'x', output_token_ids: [200005, 35644, 2000"
    inp = parse(line, vocab)
    assert inp.tokens == (200005, 35644, 2000)
    assert inp.truncated


def test_finish_reason_length_is_not_truncation(vocab: Vocab) -> None:
    line = "Generated response r: output: 'x', output_token_ids: [200005, 35644], finish_reason: length"
    assert not parse(line, vocab).truncated


def test_harmony_text_is_encoded_with_specials(vocab: Vocab) -> None:
    inp = parse("<|channel|>final<|message|>Hi!<|return|>\n", vocab)
    assert inp.detected == "text"
    assert inp.tokens[0] == 200005 and inp.tokens[-1] == 200002


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "input is empty"),
        ("   \n\n", "input is empty"),
        ("[]", "no ids"),
        ("1 2 201089", "token 2 at line 1, column 5: 201089 is outside"),
        ("1,\n2,\n-4", "token 2 at line 3, column 1: -4 is outside"),
        ("5 " + "9" * 5000, "is outside"),
        ('[1, "two", 3]', 'token 1 is "two", not an integer'),
        ("[1, 2.5]", "not an integer"),
        ("[1, true]", "not an integer"),
        ("hello world, nothing here", "no token ids or Harmony text found"),
        ('{"id": 1, "choices": []}', "no token ids found in the JSON"),
        ('{"a": ' * 5000 + "1" + "}" * 5000, "nested too deeply"),
        ('{"token_ids": [1, 2]}\n{"token_ids": [3,', "invalid JSON at line 2"),
    ],
)
def test_bad_input_is_one_clear_error(text: str, message: str, vocab: Vocab) -> None:
    with pytest.raises(InputError, match=message.replace("[", r"\[").replace("(", r"\(")):
        parse(text, vocab)


def test_forced_format_overrides_detection(vocab: Vocab) -> None:
    # Harmony text that happens to look like ids when forced as text.
    inp = parse("1 2 3", vocab, fmt="text")
    assert inp.detected == "text"
    assert inp.tokens == tuple(vocab.encode("1 2 3"))


def test_detect_format_names() -> None:
    assert detect_format("[1,2]") == "json"
    assert detect_format("1 2 3") == "ids"
    assert detect_format('{"token_ids": [1]}') == "json"
    assert detect_format('{"a": 1}\n{"b": 2}') == "jsonl"
    assert detect_format("x output_token_ids: [1, 2]") == "vllm-log"
    assert detect_format("<|start|>user<|message|>hi") == "text"


@pytest.mark.parametrize(
    "quoted",
    [
        "see output_token_ids: [ in the log",
        "Generated response chatcmpl-1 (streaming delta): output: '', output_token_ids: [",
    ],
)
def test_regression_harmony_text_quoting_output_token_ids(vocab: Vocab, quoted: str) -> None:
    # Found by fuzzing: a message that quotes a vLLM request-log line (`output_token_ids: [`)
    # made the Harmony text look like a vLLM log, and a good stream was refused with exit 2.
    text = f"<|channel|>final<|message|>{quoted}<|return|>"
    assert detect_format(text) == "text"
    assert parse(text, vocab).tokens == tuple(vocab.encode(text))


def test_debug_output_ids_of_newer_vllm_are_read() -> None:
    from harmony_doctor.inputs.vllm_requests import parse_vllm_line

    line = (
        "(APIServer pid=9) DEBUG 07-01 10:00:00 [request_logger.py:80] Generated response "
        "chatcmpl-7 details: output_token_ids: [200005, 17196, 200008, 12, 200002]"
    )
    record = parse_vllm_line(line, 1)
    assert record is not None
    assert (record.request_id, record.kind, record.ids) == (
        "chatcmpl-7",
        "output",
        (200005, 17196, 200008, 12, 200002),
    )
    streamed = parse_vllm_line(
        "DEBUG 07-01 10:00:00 [request_logger.py:80] Generated response chatcmpl-8 "
        "(streaming complete) details: output_token_ids: [200005, 17196]",
        2,
    )
    assert streamed is not None and (streamed.request_id, streamed.kind) == (
        "chatcmpl-8",
        "complete",
    )


def test_debug_output_ids_next_to_the_info_line_give_one_stream() -> None:
    text = (
        "DEBUG 07-01 10:00:00 [request_logger.py:80] Generated response r1 details: "
        "output_token_ids: [200005, 17196, 200008, 12, 200002]\n"
        "INFO 07-01 10:00:00 [request_logger.py:90] Generated response r1: output: "
        "'analysisx', finish_reason: stop\n"
    )
    inp = parse_tokens(text, lambda s: [], "auto")
    assert inp.format == "vllm-log" and inp.request_id == "r1"
    assert inp.tokens == (200005, 17196, 200008, 12, 200002)


@pytest.mark.parametrize("text", ["[200005, 17196, 200008, 12", "(200005, 17196, 200008,"])
def test_id_list_without_closing_bracket_is_read_as_cut(text: str) -> None:
    inp = parse_tokens(text, lambda s: [], "auto")
    assert inp.tokens[:3] == (200005, 17196, 200008)
    assert inp.truncated
    assert any("cut" in note for note in inp.notes)


def test_whole_id_list_is_not_cut() -> None:
    inp = parse_tokens("[200005, 17196]", lambda s: [], "auto")
    assert not inp.truncated and not inp.notes


def test_token_range_comes_from_openai_harmony() -> None:
    from harmony_doctor.harmony.vocab import harmony_token_limit

    limit = harmony_token_limit()
    assert limit == 201089  # openai-harmony 0.0.8 decodes 201088 as <|reserved_201088|>
    assert parse_tokens(f"1 2 {limit - 1}", lambda s: [], "auto").tokens[-1] == limit - 1
    with pytest.raises(InputError, match=f"{limit} is outside the range openai-harmony accepts"):
        parse_tokens(f"[1, {limit}]", lambda s: [], "auto")


@given(
    st.lists(st.integers(0, 10**12) | st.integers(199_990, 201_100), max_size=12),
    st.sampled_from([", ", ",", " ", " ,  "]),
)
def test_plain_id_lists_take_the_fast_path_with_the_same_answer(ids: list[int], sep: str) -> None:
    """A logged list (digits, commas, spaces) parses as the general loop parses it (tabs make
    the same list take the loop): same ids, same error (huge ids, zero-padded ids)."""
    from harmony_doctor.inputs.id_lists import parse_id_list

    text = sep.join(str(i) if i % 3 else f"{i:010d}" for i in ids)

    def parsed(shown: str) -> list[int] | str:
        try:
            return parse_id_list(shown, 1, 1)
        except InputError as exc:
            return str(exc)

    assert parsed(text) == parsed(text.replace(" ", "\t"))


_PIECES = [
    "[",
    "]",
    "{",
    "}",
    "(",
    ")",
    '"a": ',
    "1",
    "200006",
    "-5",
    ",",
    " ",
    "\n",
    "\t",
    "\x1c",
    "\u00a0",
    "\ufeff",
    "data: ",
    "<|start|>",
    "<|channel|>",
    "<|",
    "x",
    "INFO ",
    "2026-11-20 ",
    "output_token_ids: [1]",
    "Generated response a: ",
    "1.5",
    "None",
]


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=14).map("".join))
def test_may_hold_tokens_is_false_only_where_detect_format_finds_no_stream(text: str) -> None:
    """scan skips looking at a whole file when may_hold_tokens says no: detect_format must then
    find no token stream there either (a vLLM log's ids are the log reader's)."""
    from harmony_doctor.inputs.token_sniff import may_hold_tokens

    if may_hold_tokens(text.encode()):
        return
    try:
        shape = detect_format(text)
    except (InputError, IndexError):
        return
    assert shape == "vllm-log", (text, shape)


def test_may_hold_tokens_on_common_shapes() -> None:
    from harmony_doctor.inputs.token_sniff import may_hold_tokens

    assert may_hold_tokens(b"[200005, 17196]") and may_hold_tokens(b"  200005 17196\n")
    assert may_hold_tokens(b'{"output_ids": [1]}') and may_hold_tokens(b"<|channel|>final")
    assert not may_hold_tokens(b"2026-11-20 10:00:01 INFO served\n<no markup>")
    assert not may_hold_tokens(b"(APIServer pid=1) INFO x\n") and not may_hold_tokens(b"")


def test_a_vllm_log_holds_its_ids_at_a_pointer_each() -> None:
    """explain holds every completion and prompt of a vLLM log at once: an id is a reference to
    one shared int (8 bytes), not an int made for each (36 bytes: 40 MiB of a 20 MB log)."""
    import tracemalloc

    from harmony_doctor.inputs import vllm_requests as tokens

    ids = [200_000 - (n * 7919) % 150_000 for n in range(100_000)]  # none of Python's small ints
    line = (
        "INFO 08-05 10:00:00 [logger.py:41] Generated response chatcmpl-1: output: '', "
        f"output_token_ids: {ids}, finish_reason: stop"
    )
    tokens.parse_vllm_line(line, 1)  # anything made once per process is made now
    tracemalloc.start()
    try:
        record = tokens.parse_vllm_line(line, 1)
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert record is not None and list(record.ids or ()) == ids
    assert held < 12 * len(ids), held  # the tuple's pointers and a little; 36 each before


# --- JSON documents of many streams: each handed on once its last line is read ---------------


def _gathered(docs: list[dict[str, object]]) -> list[tuple[str, list[int], list[int] | None, int]]:
    """The streams of `docs` (a line each) gathered all at once, as the rules say: chunks of one
    (id, choice) joined in order, a prompt keyed without a choice shared by every choice of
    its response, streams with output ids first in the order they start (else those with a
    prompt). The reference the reader that holds a stream only while it is read must equal
    (it agrees with the reader that held every stream, checked when this test was written)."""
    outputs: dict[str, list[int]] = {}
    prompts: dict[str, list[int]] = {}
    first: dict[str, int] = {}
    for number, doc in enumerate(docs, 1):
        rid = str(doc["id"])
        if "prompt_token_ids" in doc:
            first.setdefault(rid, number)
            prompts[rid] = prompts.get(rid, []) + list(doc["prompt_token_ids"])  # type: ignore[call-overload]
        for choice in doc.get("choices", []):  # type: ignore[attr-defined]
            label = f"{rid}#{choice['index']}"
            first.setdefault(label, number)
            outputs.setdefault(label, []).extend(choice["token_ids"])
    found = [label for label in first if outputs.get(label) or prompts.get(label)]
    kept = [label for label in found if outputs.get(label)] or found
    return [
        (
            label,
            outputs.get(label, []),
            prompts.get(label, prompts.get(label.split("#")[0])),
            first[label],
        )
        for label in kept
    ]


_DOC = st.fixed_dictionaries(
    {"id": st.sampled_from(["a", "b", "c"])},
    optional={
        "prompt_token_ids": st.lists(st.integers(0, 9), max_size=2),
        "choices": st.lists(
            st.fixed_dictionaries(
                {"index": st.integers(0, 1), "token_ids": st.lists(st.integers(10, 99), max_size=3)}
            ),
            max_size=2,
        ),
    },
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_DOC, min_size=1, max_size=12))
def test_streams_read_a_line_at_a_time_equal_the_streams_gathered_whole(
    docs: list[dict[str, object]],
) -> None:
    """Interleaved chunks, prompts before, after and between their choices, empty lists: the
    streams handed on as their last line is read are the streams gathered at once, in order."""
    from harmony_doctor.inputs.tokens import token_streams

    text = "\n".join(json.dumps(doc) for doc in docs) + "\n"
    expected = _gathered(docs)
    if not expected:
        with pytest.raises(InputError, match="no token ids found"):
            token_streams(text)
        return
    streams = token_streams(text)
    got = [
        (inp.request_id or "", list(inp.tokens), list(inp.prompt_tokens or ()) or None, line)
        for inp, line in streams.each
    ]
    assert streams.count == len(expected)
    want = [
        (label, tokens or list(prompt or ()), None if not tokens else prompt or None, line)
        for label, tokens, prompt, line in expected  # a prompt alone is replayed as the stream
    ]
    assert got == want


def test_a_jsonl_of_many_id_lists_is_not_held_whole() -> None:
    """60,000 id lists a line held at once were 38 MB of lists and ints and 16 MB of records in
    a scan (187 MiB peak): each stream is now held from its first line to its last (8,000
    lists of 48 ids: 2.8 MB traced at the peak, 7.4 MB holding them all)."""
    import tracemalloc

    from harmony_doctor.harmony.vocab import id_objects
    from harmony_doctor.inputs.tokens import token_streams

    id_objects()  # made once per process: not this reader's memory
    text = "".join(
        f"[{', '.join(str(1000 + (n * 31 + k) % 150_000) for k in range(48))}]\n"
        for n in range(8_000)
    )

    def peak(read_all: bool) -> int:
        tracemalloc.start()
        try:
            streams = token_streams(text)
            if read_all:
                held = list(streams.each)
                assert len(held) == 8_000
            else:
                assert sum(1 for _ in streams.each) == 8_000
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    whole, one_at_a_time = peak(read_all=True), peak(read_all=False)
    assert one_at_a_time < whole / 2, (one_at_a_time, whole)
