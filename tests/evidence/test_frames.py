"""A traceback cut before its exception line, read by its frames (evidence/frames.py)."""

from __future__ import annotations

from harmony_doctor.evidence.frames import cut_render

_FRAMES = (
    "Traceback (most recent call last):\n"
    '  File "/srv/app/server.py", line 88, in build_prompt\n'
    "    ids = enc.render_conversation_for_completion(convo, Role.ASSISTANT)\n"
    '  File "/srv/.venv/lib/python3.11/site-packages/openai_harmony/__init__.py", line 540, '
    "in render_conversation_for_completion\n"
    "    return self._inner.render_conversation_for_completion(\n"
)


def test_frames_through_the_renderer_cut_before_the_exception_are_a_render_failure() -> None:
    found = cut_render(_FRAMES)
    assert found is not None and found.code == "HD175"
    assert found.line == 3  # the frame that calls the renderer
    assert found.message == "ids = enc.render_conversation_for_completion(convo, Role.ASSISTANT)"


def test_a_log_prefix_is_not_part_of_the_frame_shown() -> None:
    prefixed = "\n".join(
        f"(APIServer pid=7) ERROR 01-02 03:04:05 [chat.py:9] {line}" for line in _FRAMES.split("\n")
    )
    found = cut_render(prefixed)
    assert found is not None
    assert found.message.startswith("ids = enc.render_conversation_for_completion(")


def test_a_traceback_with_its_exception_line_is_left_to_the_log_readers() -> None:
    assert cut_render(_FRAMES + "KeyError: 'role'\n") is None


def test_a_cut_traceback_elsewhere_is_no_render_failure() -> None:
    other = _FRAMES.replace("render_conversation_for_completion", "encode_ordinary")
    assert cut_render(other) is None
    assert cut_render("render_for_completion(messages) is where it hangs\n") is None
