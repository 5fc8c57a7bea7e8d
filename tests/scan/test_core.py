"""The scan core: the reference's rules on small inputs, chunking invariance, Rust == Python."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harmony_doctor.inputs.timestamps import own_stamp
from harmony_doctor.scan.core import (
    Batch,
    CoreLike,
    IdLine,
    Meta,
    Stats,
    Window,
    hour_key,
    own_pid,
)
from harmony_doctor.scan.reference_core import Core

Result = tuple[list[Window], list[IdLine], Stats]


def run(core: CoreLike, chunks: list[bytes], metas: list[Meta | None] | None = None) -> Result:
    windows: list[Window] = []
    ids: list[IdLine] = []
    for i, chunk in enumerate(chunks):
        batch = core.feed(chunk, metas[i] if metas else None)
        windows += batch.windows
        ids += batch.id_lines
    batch = core.finish()
    return windows + batch.windows, ids + batch.id_lines, core.stats()


def scan(data: bytes, **kw: int | bool) -> Result:
    return run(Core(**kw), [data])  # type: ignore[arg-type]


def bytewise(data: bytes, **kw: int | bool) -> Result:
    return run(Core(**kw), [data[i : i + 1] for i in range(len(data))])  # type: ignore[arg-type]


# -- per-line rules ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("head", "stamp"),
    [
        (b"2026-11-27 10:00:01 x", b"2026-11-27 10:00:01"),
        (b"[2026-11-27T23:59:59.123] x", b"2026-11-27 23:59:59"),
        (b"INFO 11-27 10:00:01 [a.py:1]", b"11-27 10:00:01"),
        (b"(APIServer pid=1) WARNING\t01-02  03:04:05 x", b"01-02 03:04:05"),
        (b"  11-27 10:00:01 bare at line start", b"11-27 10:00:01"),
        (b"x 11-27 10:00:01 bare not at line start", None),
        (b"12026-11-27 10:00:01 digit before the year", None),
        (b"12026-11-27 10:00:01 then 2025-01-01 01:01:01", b"2025-01-01 01:01:01"),
        (b"2026-13-27 10:00:01 month 13 decides: no stamp, INFO 11-27 10:00:01", None),
        (b"2026-11-00 10:00:01", None),
        (b"2026-11-27 24:00:01", None),
        (b"2026-11-27 10:00:60", None),
        (b"INFO 00-27 10:00:01", None),
        (b"INFO 11-32 10:00:01 then INFO 11-27 10:00:01", None),
        (b"1999-12-31 23:59:59", b"1999-12-31 23:59:59"),
        (b"2126-11-27 10:00:01", None),
        (b"[GIN] 2025/11/12 - 10:41:19 | 200 |", b"2025-11-12 10:41:19"),
        (b"Nov 12 10:41:19 h ollama[1]: [GIN] 2025/11/12 - 10:41:19", b"2025-11-12 10:41:19"),
        (b"INFO 11-27 10:00:01 then [GIN] 2025/11/12 - 10:41:19", b"2025-11-12 10:41:19"),
        (b"[GIN] 2025/11/32 - 10:41:19 decides: no stamp, 2026-11-27 10:00:01", None),
        (b"no stamp here", None),
    ],
)
def test_own_stamp(head: bytes, stamp: bytes | None) -> None:
    assert own_stamp(head) == stamp


@pytest.mark.parametrize(
    ("head", "pid"),
    [
        (b"(APIServer pid=123) INFO", 123),
        (b"pid: 7 x", 7),
        (b"pid:\t 007", 7),
        (b"ppid=5 pid=9", 9),
        (b"_pid=5", None),
        (b"pid=" + b"9" * 18, int("9" * 18)),
        (b"pid=" + b"9" * 19, None),
        (b"pid =5", None),
    ],
)
def test_own_pid(head: bytes, pid: int | None) -> None:
    assert own_pid(head) == pid


def test_hour_key() -> None:
    assert hour_key(b"2026-11-27 10:00:01") == b"2026-11-27 10"
    assert hour_key(b"11-27 10:00:01") == b"11-27 10"
    assert hour_key(None) is None


def test_stamps_and_pids_only_in_the_first_200_bytes() -> None:
    pad = b"x" * 190
    data = (
        b"INFO 11-27 10:00:01 start\n"
        + pad
        + b" 2026-01-01 01:01:01 pid=5 Received request a\n"
        + pad
        + b"xxxx pid=12345 Received request b\n"
    )
    _, _, s = scan(data)
    assert s.received_lines == 2
    # the stamp starts before byte 200 but ends after it: not seen; pid=12345 is cut to pid=1
    assert s.tallies == {("received", None, b"11-27 10"): 1, ("received", 1, b"11-27 10"): 1}


def test_stamp_carry_and_wrapper_meta() -> None:
    data = (
        b"INFO 11-27 10:00:01 a\n"  # 1
        b"Received request r1\n"  # 2: carried stamp
        b"2026-11-28 11:00:00 b\n"  # 3
        b"Received request r2\n"  # 4: carried ISO
        b"Received request r3\n"  # 5: wrapper stamp (meta) and wrapper pid
        b"Received request r4 pid=3\n"  # 6: carries line 5's wrapper stamp; own pid wins
        b"2026-11-29 99:00:00 Received request r5\n"  # 7: invalid own stamp -> carried; no pid
    )
    meta: Meta = [(5, b"2026-12-01 05:06:07", 44), (6, None, 45)]
    _, _, s = run(Core(), [data], [meta])
    assert s.tallies == {
        ("received", None, b"11-27 10"): 1,
        ("received", None, b"2026-11-28 11"): 1,
        ("received", 44, b"2026-12-01 05"): 1,
        ("received", 3, b"2026-12-01 05"): 1,
        ("received", None, b"2026-12-01 05"): 1,
    }


def test_meta_wrapper_stamp_only_without_own_stamp() -> None:
    meta: Meta = [(1, b"2020-01-01 00:00:00", None)]
    _, _, s = run(Core(), [b"INFO 11-27 10:00:01 Received request x\n"], [meta])
    assert s.tallies == {("received", None, b"11-27 10"): 1}


def test_meta_must_be_sorted_and_ahead() -> None:
    core = Core()
    core.feed(b"a\nb\n")
    with pytest.raises(ValueError):
        core.feed(b"c\n", [(2, None, 1)])
    with pytest.raises(ValueError):
        core.feed(b"c\n", [(4, None, 1), (3, None, 1)])


def test_access_received_and_gin() -> None:
    data = (
        b'(APIServer pid=7) INFO 11-27 10:00:01 [api_server.py:1] 127.0.0.1:5 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
        b'127.0.0.1 - "GET /v1/responses?x=1 HTTP/1.1" 200\n'
        b'"POST /v1/completions" Received request x\n'  # access wins, counted once
        b'"POST /v1/models HTTP/1.1"\n'  # not an inference endpoint
        b'[GIN] 2025/11/12 - 10:41:19 | 200 | 1.2s | ::1 | POST     "/api/chat"\n'
        b'[GIN] 2025/11/12 - 10:41:19 | 200 | 1.2s | ::1 | GET "/v1/Models"\n'  # [a-z/] only
        b"[2026-11-27 10:00:01] Received request abc pid=3\n"
        b"Received requests\n"
    )
    _, _, s = scan(data)
    assert s.access_lines == 4
    assert s.received_lines == 1
    assert s.first_access_line is not None and s.first_access_line.startswith(b"(APIServer pid=7)")
    assert s.tallies == {
        ("access", 7, b"11-27 10"): 1,
        ("access", None, b"11-27 10"): 2,
        ("access", None, b"2025-11-12 10"): 1,  # the gin line's own full date
        ("received", 3, b"2026-11-27 10"): 1,
    }


# llama-server's request lines (tools/server/server-http.cpp log_server_request: SRV_INF
# "request: %s %s %s %d", later "done request: ..."; the function name cut to 12 bytes), as
# logged in issues and by tools that read them, and LM Studio's (`[DEBUG] Received request:
# POST to /v1/chat/completions with body {`, its server logs 2025-2026).
REQUEST_LINES = [
    (b"srv  log_server_r: request: POST /v1/chat/completions 127.0.0.1 200", True),
    (b"srv  log_server_r: request: POST /completion 127.0.0.1 503", True),
    (b"srv  log_server_r: done request: POST /v1/messages 172.16.0.114 200", True),
    (b"[51973] srv  log_server_r: done request: POST /chat/completions ::1 500", True),
    (b"0.22.455.959 I srv  log_server_r: request: POST /infill 127.0.0.1 200", True),
    (b"srv  log_server_r: request: POST /api/chat 127.0.0.1 200", True),
    (b"srv  log_server_r: request: POST /v1/responses 10.0.0.2 200", True),
    (
        b"[2026-07-26 22:24:10][DEBUG] Received request: POST to /v1/chat/completions with body {",
        True,
    ),
    (b"srv  log_server_r: done request: GET /slots 127.0.0.1 200", False),
    (b"srv  log_server_r: request: POST /tokenize 127.0.0.1 200", False),
    (b"srv  log_server_r: request: POST /v1/embeddings 127.0.0.1 200", False),
    (b"srv  log_server_r: request: POST /v1/messages/count_tokens 127.0.0.1 200", False),
    (b"srv  log_server_r: request: POST /v1/chat/completions", False),  # cut before its address
    (b'srv  log_server_r: request:  {"messages": [{"role": "user"}]}', False),  # verbose body
    (b'srv  log_server_r: response: {"error":{"code":500,"message":"x"}}', False),
    (b"Received request: GET to /v1/chat/completions with body {", False),
    # uvicorn's access lines (vLLM, SGLang): OpenAI's and Anthropic's routes, SGLang's own
    (b'INFO:     127.0.0.1:5 - "POST /v1/chat/completions HTTP/1.1" 200 OK', True),
    (b'INFO:     127.0.0.1:5 - "POST /v1/messages HTTP/1.1" 200 OK', True),
    (b'[2025-08-07 21:37:03] INFO:     127.0.0.1:5 - "POST /generate HTTP/1.1" 200 OK', True),
    (b'INFO:     127.0.0.1:5 - "POST /v1/messages/count_tokens HTTP/1.1" 200 OK', False),
    (b'INFO:     127.0.0.1:5 - "POST /generated HTTP/1.1" 200 OK', False),
    (b'INFO:     127.0.0.1:5 - "GET /v1/models HTTP/1.1" 200 OK', False),
]


# llama-server's routes (tools/server/server.cpp): those that generate, and others
GENERATING = (
    b"/completion",
    b"/completions",
    b"/v1/completions",
    b"/chat/completions",
    b"/v1/chat/completions",
    b"/api/chat",
    b"/v1/responses",
    b"/responses",
    b"/v1/messages",
    b"/infill",
)
OTHER_ROUTES = (
    b"/v1/messages/count_tokens",
    b"/tokenize",
    b"/detokenize",
    b"/apply-template",
    b"/embedding",
    b"/v1/embeddings",
    b"/rerank",
    b"/slots",
    b"/props",
    b"/health",
    b"/v1/models",
    b"/v1/chat/completions/x",
    b"/v1/complet",
)
REQUEST_FORMS = (
    b"srv  log_server_r: request: POST %s 127.0.0.1 200",
    b"srv  log_server_r: done request: POST %s ::1 500",
    b"[2026-07-26 22:24:10][DEBUG] Received request: POST to %s with body {",
)


@pytest.mark.parametrize(
    ("line", "access"),
    [
        *REQUEST_LINES,
        *((form % path, True) for form in REQUEST_FORMS for path in GENERATING),
        *((form % path, False) for form in REQUEST_FORMS for path in OTHER_ROUTES),
    ],
)
def test_a_servers_own_request_line_is_an_access_line(line: bytes, access: bool) -> None:
    hour = hour_key(own_stamp(line) or b"11-27 10:00:01")  # its own stamp, else the last
    for core in (Core(), native_core()):
        _, _, s = run(core, [b"INFO 11-27 10:00:01 start\n" + line + b"\n"])
        assert (s.access_lines, s.received_lines) == (int(access), 0)
        assert s.tallies == ({("access", None, hour): 1} if access else {})
        assert s.first_access_line == (line if access else None)


def test_a_request_line_that_is_also_a_quoted_access_line_counts_once() -> None:
    data = (
        b'srv  log_server_r: request: POST /v1/completions 127.0.0.1 200 "POST /v1/completions"\n'
        b"Received request: POST to /v1/responses with body Received request x\n"
    )
    for core in (Core(), native_core()):
        _, _, s = run(core, [data])
        assert (s.access_lines, s.received_lines) == (2, 0)


@pytest.mark.parametrize(
    ("line", "hit"),
    [
        (b"openai_harmony.HarmonyError: x", True),
        (b"Unknown role: foo", True),
        (b"unexpected tokens remaining in message header", True),
        (b"found a tool call in the wrong channel", True),
        (b"recovered raw output from the parser", True),
        (b"parser in non-terminal state", True),
        (b"harmonyerror", False),
        (b'{"content": "<|start|>assistant"}', True),
        (b"content = '<|channel|>'", True),
        (b"OUTPUT_TEXT:'x' <|end|>", True),
        (b"<|start|>assistant<|message|>hi", False),  # markup without a content field
        (b'{"content": "hi"}', False),  # a content field without markup
        (b"context: '<|x|>'", True),  # "text: '" inside "context"
        (b"contexts: '<|x|>'", False),
    ],
)
def test_error_hits(line: bytes, hit: bool) -> None:
    windows, _, _ = scan(b"before\n" + line + b"\nafter\n")
    assert [w.hit_lines for w in windows] == ([(2,)] if hit else [])


def test_id_lines() -> None:
    data = (
        b"INFO 11-27 10:00:01 (APIServer pid=4) Generated response r1: output: 'x', output_token_ids: [1, 2], finish_reason: stop\n"
        b"output_token_ids =[3]\n"
        b"output_token_ids [3]\n"
        b"HarmonyError output_token_ids: [9]\n"
        b"Received request r2: prompt: None, params: x, prompt_token_ids: [4, 5], lora_request: None.\n"
    )
    windows, ids, _ = scan(data, before=0, after=0)
    assert [(i.line, i.stamp, i.pid, i.cut) for i in ids] == [
        (1, b"11-27 10:00:01", 4, False),
        (2, b"11-27 10:00:01", None, False),
        (4, b"11-27 10:00:01", None, False),
    ]  # a prompt's ids are no completion
    assert ids[1].text == b"output_token_ids =[3]"
    assert [w.hit_lines for w in windows] == [(4,)]
    _, no_ids, _ = scan(data, ids=False)
    assert no_ids == []


# -- lines -------------------------------------------------------------------------------------


def test_empty_input() -> None:
    assert scan(b"") == ([], [], Stats(0, 0, 0, 0, 0, {}, None))


@pytest.mark.parametrize(
    ("data", "lines"), [(b"a", 1), (b"a\n", 1), (b"a\nb", 2), (b"\n", 1), (b"\n\n", 2)]
)
def test_line_count(data: bytes, lines: int) -> None:
    s = scan(data)[2]
    assert (s.lines, s.bytes) == (lines, len(data))


def test_no_trailing_newline_hit_is_last_line() -> None:
    windows, _, s = scan(b"a\nb\nHarmonyError", before=2, after=100)
    assert windows[0] == Window(2, b"b\nHarmonyError", (3,), None)
    assert s.lines == 3


def test_crlf_stays_in_line_text() -> None:
    windows, ids, _ = scan(b"output_token_ids: [1]\r\nHarmonyError\r\n", before=0, after=0)
    assert ids[0].text == b"output_token_ids: [1]\r"
    assert windows == [Window(2, b"HarmonyError\r", (2,), None)]


def test_long_lines_are_cut() -> None:
    long_hit = b"x" * 9 + b"HarmonyError"  # anchor past max_line: not seen
    long_ids = b"output_token_ids: [" + b"1, " * 10
    data = long_hit + b"\n" + long_ids + b"\nHarmonyErr\nshort\n"
    windows, ids, s = scan(data, max_line=20, before=100, after=100)
    assert s.cut_lines == 2
    assert s.lines == 4
    assert len(ids) == 1
    assert ids[0] == IdLine(2, long_ids[:20], None, None, True)
    assert windows == []
    # a window's text is the cut stream
    data2 = b"a" * 40 + b"\nHarmonyError\n" + b"b" * 40 + b"\n"
    windows, _, s = scan(data2, max_line=20, before=100, after=100)
    assert windows == [Window(1, b"a" * 20 + b"\nHarmonyError\n" + b"b" * 20, (2,), None)]
    assert bytewise(data2, max_line=20, before=100, after=100) == scan(
        data2, max_line=20, before=100, after=100
    )


def test_line_of_exactly_max_line_is_not_cut() -> None:
    s = scan(b"abcd\nabcde\n", max_line=4)[2]
    assert s.cut_lines == 1


# -- windows -----------------------------------------------------------------------------------


def test_window_context_before_and_after() -> None:
    data = b"INFO 11-27 10:00:01 l1\nl2\nl3\nHarmonyError l4\nl5\nl6\nl7\n"
    # line 4 starts at 29; 29-3 = 26 is where line 3 starts; 29-4 = 25 is in line 2
    # after=6: last "\n" in [e, e+6) is the end of l5
    windows = scan(data, before=3, after=6)[0]
    assert windows == [Window(3, b"l3\nHarmonyError l4\nl5", (4,), b"11-27 10:00:01")]
    windows = scan(data, before=4, after=6)[0]
    assert windows == [Window(2, b"l2\nl3\nHarmonyError l4\nl5", (4,), b"11-27 10:00:01")]
    windows = scan(data, before=0, after=0)[0]
    assert windows == [Window(4, b"HarmonyError l4", (4,), b"11-27 10:00:01")]
    windows = scan(data, before=1000, after=1000)[0]
    assert windows == [Window(1, data[:-1], (4,), None)]


def test_windows_merge_when_touching_and_split_when_apart() -> None:
    lines = [
        b"HarmonyError a",
        b"x",
        b"x",
        b"x",
        b"HarmonyError b",
        *[b"y"] * 20,
        b"HarmonyError c",
    ]
    data = b"\n".join(lines) + b"\n"
    # a's window ends at the "\n" after line 3 (offset 18); b (offset 21) starts at line 3 -> merge
    windows = scan(data, before=4, after=5)[0]
    assert [(w.first_line, w.hit_lines) for w in windows] == [(1, (1, 5)), (24, (26,))]
    assert windows[0].text == b"\n".join(lines[:7])
    # with after=4 a's window ends at offset 16, before line 3 (17): two windows
    windows = scan(data, before=4, after=4)[0]
    assert [(w.first_line, w.hit_lines) for w in windows] == [(1, (1,)), (3, (5,)), (24, (26,))]
    # a window start on the pending end's line (touch) merges
    windows = scan(b"HarmonyError\nHarmonyError\n", before=0, after=0)[0]
    assert [w.hit_lines for w in windows] == [(1,), (2,)]
    windows = scan(b"HarmonyError\nHarmonyError\n", before=1, after=0)[0]
    assert [w.hit_lines for w in windows] == [(1, 2)]


def test_max_window_starts_a_fresh_window() -> None:
    data = b"".join(b"HarmonyError %02d\n" % i for i in range(10))
    windows = scan(data, before=0, after=100, max_window=40)[0]
    assert all(len(w.text) <= 40 or len(w.hit_lines) == 1 for w in windows)
    assert [h for w in windows for h in w.hit_lines] == list(range(1, 11))
    assert len(windows) > 1
    # a fresh window takes its own `before` context even if that overlaps the emitted one
    windows = scan(data, before=30, after=0, max_window=40)[0]
    assert windows[1].first_line < windows[0].first_line + len(windows[0].hit_lines) + 1
    assert windows[1].first_line <= windows[0].hit_lines[-1]


def test_a_context_line_longer_than_a_window_is_left_out() -> None:
    """The line `before` reaches into is context while the window stays within max_window;
    a longer one is left out (three failing 4 MiB lines were held, and read, as one window of
    12 MiB: each is now its own)."""
    import importlib.util

    data = b"x" * 200 + b"\nctx\nHarmonyError\n"
    long = b"HarmonyError " + b"y" * 5000 + b"\n"
    makers: list[Any] = [Core]
    if importlib.util.find_spec("harmony_doctor._native") is not None:
        makers.append(native_core)
    for make in makers:
        assert run(make(before=8, after=0, max_window=300), [data])[0][0].first_line == 1
        (window,) = run(make(before=8, after=0, max_window=100), [data])[0]
        assert (window.first_line, window.text) == (2, b"ctx\nHarmonyError")
        windows = run(make(before=3072, after=1024, max_window=1 << 12), [long * 3])[0]
        assert [w.first_line for w in windows] == [1, 2, 3]


def test_stamp_before_is_the_effective_stamp_of_the_previous_line() -> None:
    data = b"2026-01-01 00:00:00 a\nplain\nHarmonyError\n"
    assert scan(data, before=0)[0][0].stamp_before == b"2026-01-01 00:00:00"
    assert scan(data, before=1000)[0][0].stamp_before is None


def test_windows_come_out_as_soon_as_final() -> None:
    core = Core(before=4, after=4)
    assert core.feed(b"HarmonyError\n").windows == []
    assert core.feed(b"a\n").windows == []  # after-context not complete yet
    out = core.feed(b"bbbbbbbbbb\n").windows
    assert [w.hit_lines for w in out] == [(1,)]
    assert core.finish() == Batch([], [])


def test_feed_after_finish_raises() -> None:
    core = Core()
    core.finish()
    with pytest.raises(ValueError):
        core.feed(b"x")
    with pytest.raises(ValueError):
        core.finish()


def test_memory_stays_bounded() -> None:
    core = Core(before=64, after=64, max_line=128, max_window=256)
    line = b"INFO 11-27 10:00:01 filler filler filler HarmonyError\n"
    plain = b"INFO 11-27 10:00:01 filler filler filler\n" * 50
    for _ in range(200):
        core.feed(line + plain + b"z" * 1000)
        assert len(core._buf) < 256 + 64 + 128 + len(line + plain) + 1000 + 128
    core.finish()


# -- generated logs: chunking invariance and Rust == Python -------------------------------------

LINES = st.one_of(
    st.builds(
        lambda pid, h, path, ok: (
            b'(APIServer pid=%d) INFO 11-27 %02d:00:01 [api_server.py:1] 127.0.0.1:5 - "POST /v1/%s HTTP/1.1" %s'
            % (pid, h, path, ok)
        ),
        st.integers(0, 3),
        st.integers(0, 25),
        st.sampled_from([b"chat/completions", b"responses", b"models"]),
        st.sampled_from([b"200 OK", b"400 Bad Request"]),
    ),
    st.sampled_from(
        [
            b"Traceback (most recent call last):",
            b'  File "/x/serving_chat.py", line 1, in parse',
            b'openai_harmony.HarmonyError: unexpected tokens remaining in message header: Some("x")',
            b"ERROR 11-27 10:00:02 [serving_chat.py:1] Error in chat completion",
            b"[2026-11-27 10:00:01] Received request abc pid=3",
            b"[2026-11-27 10:00:01 TP0] Prefill batch. #new-seq: 1",
            b"Generated response r1: output: 'x', output_token_ids: [1, 2], finish_reason: stop",
            b'{"content": "<|start|>assistant<|channel|>final"}',
            b'[GIN] 2025/11/12 - 10:41:19 | 200 | 1.2s | ::1 | POST "/api/chat"',
            *(line for line, _ in REQUEST_LINES),
            b"2026-11-27 25:00:00 bad hour",
            b"INFO 13-27 10:00:00 bad month",
            b"",
            b"\r",
        ]
    ),
    st.sampled_from([line for line, _ in REQUEST_LINES]),
    st.binary(max_size=40),
    # fragments of every rule, glued at random: stamps, pids, access, ids, markup
    st.lists(
        st.sampled_from(
            [
                b"INFO",
                b"WARN",
                b"WARNING",
                b"ERROR",
                b" ",
                b"\t",
                b"\x0b",
                b"\r",
                b"11-27",
                b"13-01",
                b"00-12",
                b"01-32",
                b"10:00:01",
                b"24:00:00",
                b"23:59:60",
                b"2026-11-27",
                b"T",
                b"-",
                b"/",
                b" - ",
                b"2025/11/12",
                b"2025/13/12",
                b":",
                b"1",
                b"20",
                b"1999",
                b"pid",
                b"pid=",
                b"pid:",
                b"_",
                b"x",
                b"7",
                b"1234567890",
                b'"POST /v1/',
                b'"GET /v1/',
                b"chat/completions",
                b"responses",
                b"completions",
                b'"',
                b"?",
                b"| GET",
                b"| POST",
                b'"/api/chat"',
                b'"/v1/ab/c"',
                b"output_token_ids",
                b"prompt_token_ids",
                b"=",
                b"<|",
                b"content",
                b"TEXT",
                b"'",
                b"Received request ",
                b"HarmonyError",
                # pieces of literals that the native stream pass searches for (not anchors)
                b"HarmonyE",
                b"Received r",
                b"Unexpected EOS",
                b"d EOS",
                b"tool cal",
                b"_token_i",
                b"<| POST",
                b"(APIServer pid=",
                b"(APIServer ",
                # llama-server's and LM Studio's request lines, and near misses
                b"request: POST ",
                b"request: POST /",
                b"request: POS",
                b"done ",
                b"to ",
                b"/",
                b"v1/",
                b"completion",
                b"infill",
                b"messages",
                b"api/chat",
                b" 127.0.0.1 200",
                b"srv  log_server_r: ",
            ]
        ),
        max_size=14,
    ).map(b"".join),
    st.builds(lambda n, b: b * n, st.integers(30, 300), st.sampled_from([b"x", b"HarmonyError "])),
)


@st.composite
def logs(draw: st.DrawFn) -> bytes:
    lines = draw(st.lists(LINES, max_size=40))
    data = b"\n".join(lines)
    if draw(st.booleans()):
        data += b"\n"
    return data


@st.composite
def chunkings(draw: st.DrawFn, data: bytes) -> list[bytes]:
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=12)))
    bounds = [0, *cuts, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


PARAMS = st.fixed_dictionaries(
    {
        "before": st.integers(0, 200),
        "after": st.integers(0, 200),
        "max_line": st.integers(1, 120),
        "max_window": st.integers(1, 600),
        "ids": st.booleans(),
    }
)


@given(data=st.data(), log=logs(), params=PARAMS)
def test_reference_is_chunking_invariant(
    data: st.DataObject, log: bytes, params: dict[str, Any]
) -> None:
    whole = run(Core(**params), [log])
    chunks = data.draw(chunkings(log))
    assert run(Core(**params), chunks) == whole
    assert run(Core(**params), [log[i : i + 1] for i in range(len(log))]) == whole


def native_core(**params: Any) -> CoreLike:
    pytest.importorskip("harmony_doctor._native", reason="the Rust core is not built")
    from harmony_doctor.scan.core import NativeCore

    return NativeCore(**params)


@given(data=st.data(), log=logs(), params=PARAMS)
def test_native_matches_reference(data: st.DataObject, log: bytes, params: dict[str, Any]) -> None:
    chunks = data.draw(chunkings(log))
    nlines = log.count(b"\n") + 1
    meta_lines = sorted(data.draw(st.sets(st.integers(1, nlines), max_size=5)))
    meta: Meta = [
        (
            n,
            data.draw(st.sampled_from([None, b"2026-01-02 03:04:05", b"05-06 07:08:09"])),
            data.draw(st.sampled_from([None, 8])),
        )
        for n in meta_lines
    ]
    metas: list[Meta | None] = [meta] + [None] * (len(chunks) - 1) if chunks else []
    ref_core = Core(**params)
    nat_core = native_core(**params)
    for i, chunk in enumerate(chunks):
        # per feed() call, the same batches: windows come out at the same moment
        assert nat_core.feed(chunk, metas[i]) == ref_core.feed(chunk, metas[i])
        assert nat_core.stats() == ref_core.stats()
    assert nat_core.finish() == ref_core.finish()
    assert nat_core.stats() == ref_core.stats()
    whole = run(native_core(**params), [log], [meta])
    assert whole == run(Core(**params), [log], [meta])


@given(data=st.data(), log=logs(), params=PARAMS)
def test_native_is_chunking_invariant(
    data: st.DataObject, log: bytes, params: dict[str, Any]
) -> None:
    whole = run(native_core(**params), [log])
    assert run(native_core(**params), data.draw(chunkings(log))) == whole


@pytest.mark.parametrize(
    "meta",
    [[(0, None, None)], [(-1, None, None)], [(3, None, None), (3, None, None)], [(2, None, None)]],
)
def test_both_cores_reject_bad_meta_alike(meta: Meta) -> None:
    for core in (Core(), native_core()):
        core.feed(b"a\nb\n")
        with pytest.raises(ValueError):
            core.feed(b"c\n", meta)
        assert core.stats().bytes == 4  # the rejected call changed nothing
        assert core.finish() == Batch([], [])


def test_both_cores_reject_bad_parameters_alike() -> None:
    bad: tuple[dict[str, Any], ...] = (
        {"max_line": 0},
        {"max_window": 0},
        {"before": -1},
        {"after": -1},
    )
    for kw in bad:
        with pytest.raises(ValueError):
            Core(**kw)
    for kw in bad:
        with pytest.raises(ValueError):
            native_core(**kw)


@pytest.mark.parametrize(
    ("line", "hit", "access", "received", "ids"),
    [
        (b"HarmonyE rror; tool cal; d EOS; Received req", False, False, False, False),
        (b"an Unexpected EOS and a tool call", True, False, False, False),
        (b'<| POST "/api/chat" (markup overlapping a GIN access)', False, True, False, False),
        (b'"POST /v1/models" then "POST /v1/responses?x"', False, True, False, False),
        (b"prompt_token_i ds: [1] then output_token_ids= [2]", False, False, False, True),
        (b"Received request x Received request y", False, False, True, False),
        (b"request: POST /v1/models request: POST /infill 127.0.0.1", False, True, False, False),
        (b"request: POST to /completion x request: POS", False, True, False, False),
    ],
)
def test_every_literal_occurrence_counts_on_both_cores(
    line: bytes, hit: bool, access: bool, received: bool, ids: bool
) -> None:
    data = b"(APIServer pid=5) INFO 11-27 10:00:01 x\n" + line + b"\n"
    for core in (Core(before=0, after=0), native_core(before=0, after=0)):
        windows, id_lines, stats = run(core, [data])
        assert [w.hit_lines for w in windows] == ([(2,)] if hit else [])
        assert (stats.access_lines, stats.received_lines) == (int(access), int(received))
        assert [i.line for i in id_lines] == ([2] if ids else [])


def test_vllm_prefix_pid_and_its_fallbacks_on_both_cores() -> None:
    data = (
        b"(APIServer pid=42) INFO 11-27 10:00:01 Received request a\n"
        b"(APIServer pid=x) pid=5 Received request b\n"
        b"(APIServer pid=1234567890123456789) pid=5 Received request c\n"
    )
    want = {
        ("received", 42, b"11-27 10"): 1,
        ("received", 5, b"11-27 10"): 1,
        ("received", None, b"11-27 10"): 1,
    }
    for core in (Core(), native_core()):
        assert run(core, [data])[2].tallies == want


def test_the_native_core_is_built_wherever_cargo_is() -> None:
    """The extension is optional, so a failed build would pass silently: where a Rust toolchain
    is installed (CI, `make test`), the native core must be the one in use."""
    import shutil

    from harmony_doctor.native import native_available

    if shutil.which("cargo") is None:
        pytest.skip("no Rust toolchain: the Python core is the one in use")
    assert native_available()


# -- the Rust core on two threads --------------------------------------------------------------


@given(data=st.data(), log=logs(), params=PARAMS, split=st.integers(1, 400))
def test_native_two_threads_match_one_thread_and_reference(
    data: st.DataObject, log: bytes, params: dict[str, Any], split: int
) -> None:
    """The lines of a feed() scanned in two parts on two threads (from `split` bytes on: on
    these small logs, most feeds are split, at random line starts) give the same batches and
    counts, feed by feed, as one thread and as the reference, wrapper meta included."""
    chunks = data.draw(chunkings(log))
    nlines = log.count(b"\n") + 1
    meta_lines = sorted(data.draw(st.sets(st.integers(1, nlines), max_size=8)))
    meta: Meta = [
        (n, data.draw(st.sampled_from([None, b"2026-01-02 03:04:05"])), None) for n in meta_lines
    ]
    cores = (Core(**params), native_core(**params, threads=1), native_core(**params, split=split))
    for i, chunk in enumerate(chunks):
        feeds = [core.feed(chunk, meta if i == 0 else None) for core in cores]
        assert feeds[2] == feeds[1] == feeds[0]
        assert cores[2].stats() == cores[1].stats() == cores[0].stats()
    assert cores[2].finish() == cores[1].finish() == cores[0].finish()
    assert cores[2].stats() == cores[1].stats() == cores[0].stats()


def test_a_large_log_scans_the_same_on_two_threads() -> None:
    """A generated vLLM log (unstamped access lines carry the stamp before them, tracebacks)
    fed in chunks above the Rust core's own threshold: two threads == one == the reference."""
    from tests.scan.scoped_logs import vllm_log

    text = vllm_log(3, requests=3000).text.encode()
    chunk = 400 * 1024
    chunks = [text[i : i + chunk] for i in range(0, len(text), chunk)]
    results = [run(core, chunks) for core in (native_core(), native_core(threads=1), Core())]
    assert results[0] == results[1] == results[2]
    assert results[0][2].received_lines == 3000
    assert sum(len(w.hit_lines) for w in results[0][0]) > 500  # the failures' lines


def test_the_environment_chooses_the_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("harmony_doctor._native", reason="the Rust core is not built")
    import os

    from harmony_doctor.scan.core import NativeCore
    from harmony_doctor.scan.cores import THREADS_ENV, core_threads, make_core

    for chosen in ("1", "2"):
        monkeypatch.setenv(THREADS_ENV, chosen)
        core = make_core(native=True)
        assert isinstance(core, NativeCore) and core.threads == int(chosen)
    assert isinstance(make_core(native=False), Core)
    # unset (or not 1 or 2): two threads where the process may run on 3 CPUs or more
    for unset in ("", "x"):
        monkeypatch.setenv(THREADS_ENV, unset)
        for cpus, threads in ((1, 1), (2, 1), (3, 2), (8, 2)):
            mask = set(range(cpus))
            monkeypatch.setattr(os, "sched_getaffinity", lambda _, mask=mask: mask, raising=False)
            assert core_threads() == threads
            core = make_core(native=True)
            assert isinstance(core, NativeCore) and core.threads == threads
    for bad in ({"threads": 3}, {"split": 0}):
        with pytest.raises(ValueError):
            native_core(**bad)
