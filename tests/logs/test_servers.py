"""servers.py: the server and openai-harmony releases a path, a line or a frame points to."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from harmony_doctor.logs import servers, version_label
from harmony_doctor.logs.extract import extract_text
from harmony_doctor.logs.servers import frame_versions, path_server, text_server
from tests.helpers import SAMPLES
from tests.logs.helpers import HARMONY_INIT, VLLM_SERVING


def test_version_labels() -> None:
    assert version_label(frozenset({1})) == "0.0.1"
    assert version_label(frozenset({1, 2})) == "0.0.1-0.0.2"
    assert version_label(frozenset({3, 4})) == "0.0.3-0.0.4"
    assert version_label(frozenset({5})) == ">=0.0.5"
    assert version_label(frozenset({1, 2, 3, 4, 5})) is None
    assert version_label(None) is None


def test_servers_by_package_path_and_by_words() -> None:
    assert path_server(VLLM_SERVING) == "vllm"
    assert path_server("/home/me/sglang/srt/server.py") == "sglang"
    assert path_server("/app/server.py") is None
    assert text_server("Mar 14 08:09:10 box ollama[77]: level=ERROR") == "ollama"
    assert text_server("(EngineCore_DP0 pid=12) INFO ready") == "vllm"
    assert text_server("INFO: server started") is None


def test_releases_by_the_line_of_an_openai_harmony_frame() -> None:
    assert frame_versions(HARMONY_INIT, 627, "process") == frozenset({3, 4})
    assert frame_versions(HARMONY_INIT, 674, "load_harmony_encoding") == frozenset({2})
    assert frame_versions(HARMONY_INIT, 612, None) == frozenset({1, 2})
    assert frame_versions(HARMONY_INIT, 1, "process") is None
    assert frame_versions(VLLM_SERVING, 627, "process") is None


def test_server_in_a_stretch_of_log_by_words_then_by_path() -> None:
    from harmony_doctor.logs.servers import server_in

    assert server_in("(APIServer pid=7) ERROR 11-28 10:15:06 [serving_chat.py:1145] x") == "vllm"
    assert server_in('  File "/opt/sglang/srt/managers/tokenizer_manager.py", line 9') == "sglang"
    assert server_in('  File "/usr/lib/python3/site-packages/vllm/entrypoints/x.py"') == "vllm"
    assert server_in("2026-11-20 10:00:01 INFO nothing names a server") is None


_WORDS = [
    "pid=",
    "vllm.entrypoints",
    "[serving.py:12]",
    "sglang",
    "[TM][",
    "TensorRT-LLM",
    "Llama-Stack",
    "OLLAMA",
    "source=x.go:1",
    "LM Studio",
    "common_chat_parse",
    "srv  x: ",
    "slot a: ",
    'got exception: {"code"',
    "at row 1, column 2:",
    "GroqException",
    "[2026-11-01 00:00:00 TP0] ",
    "(APIServer pid=7) ",
    "\u212a",
    "\u017f",
    "é",
]


@given(
    st.lists(
        st.one_of(st.sampled_from(_WORDS), st.text(alphabet=" ab[]():=.-_/\\", max_size=8)),
        max_size=8,
    )
)
def test_the_words_that_rule_a_text_out_change_no_answer(parts: list[str]) -> None:
    text = "".join(parts)
    assert servers.text_server(text) == servers.text_server_reference(text)


def test_every_sample_line_names_the_same_server_either_way() -> None:
    for path in SAMPLES.iterdir():
        for line in path.read_text(errors="replace").splitlines():
            assert servers.text_server(line) == servers.text_server_reference(line), line


def test_a_raise_is_the_servers_its_frames_name_over_a_forms_wording() -> None:
    """SGLang copied vLLM's check: the form's wording says vLLM, the frames' paths SGLang."""
    raised = "ValueError: Expected 2 output messages (reasoning and final), but got 3."
    assert servers.raise_server("vllm", "sglang", raised) == "sglang"
    assert servers.raise_server("vllm", None, raised) == "vllm"
    assert servers.raise_server(None, "lmdeploy", raised) == "lmdeploy"
    own = "(APIServer pid=7) ERROR 11-28 10:00:01 [serving_chat.py:1] " + raised
    assert servers.raise_server("vllm", "sglang", own) == "vllm"  # its own words name vLLM
    tagged = "[serving_chat.py:785] " + raised  # a file tag both servers write
    assert servers.raise_server("vllm", "sglang", tagged) == "sglang"


def test_a_traceback_read_line_by_line_takes_its_frames_server() -> None:
    text = "\n".join(
        [
            "Traceback (most recent call last):",
            '  File "/w/sglang/python/sglang/srt/entrypoints/openai/serving_chat.py", line 7, in f',
            "    raise ValueError(",
            "ValueError: Expected 2 output messages (reasoning and final), but got 3.",
        ]
    )
    (error,) = extract_text(text)
    assert error.server == "sglang"
