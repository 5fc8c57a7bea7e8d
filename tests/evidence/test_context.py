"""evidence/context.py: the server every piece of a paste names together."""

from __future__ import annotations

from harmony_doctor.evidence.context import attribute, servers_named
from harmony_doctor.logs.extract import extract_text

SGLANG = """\
[2025-09-01 10:00:00] ERROR [serving_chat.py:560] Error: unknown role: assistantassistant
Traceback (most recent call last):
  File "/usr/lib/python3.12/site-packages/sglang/srt/entrypoints/openai/serving_chat.py", line 540, in gen
    parser.process(token)
  File "/usr/lib/python3.12/site-packages/openai_harmony/__init__.py", line 637, in process
    self._inner.process(token)
openai_harmony.HarmonyError: Unknown role: assistantassistant
"""


def test_package_paths_and_own_names_are_counted() -> None:
    named = servers_named(SGLANG)
    assert named["sglang"] >= 1 and named["vllm"] == 0


def test_a_line_shape_another_server_shares_gives_way_to_the_paths() -> None:
    found = extract_text(SGLANG)
    assert {e.server for e in found} == {"vllm"}  # `[serving_chat.py:N]` alone says vLLM
    assert {e.server for e in attribute(found, SGLANG)} == {"sglang"}


def test_a_server_the_paste_names_itself_is_kept() -> None:
    vllm = SGLANG.replace("sglang/srt", "vllm")
    found = extract_text(vllm)
    assert {e.server for e in attribute(found, vllm)} == {"vllm"}
    both = SGLANG + '  File "/x/site-packages/vllm/entrypoints/a.py", line 1, in f\n'
    assert attribute(found, both) == found  # a tie: nothing to decide by
