"""What the tests of harmony_doctor.logs build on: a vLLM traceback, prefixes, one finding."""

from __future__ import annotations

from harmony_doctor.logs import extract_text
from harmony_doctor.models import LogError

HARMONY_INIT = "/srv/venv/lib/python3.12/site-packages/openai_harmony/__init__.py"


VLLM_SERVING = "/srv/venv/lib/python3.12/site-packages/vllm/entrypoints/openai/serving_chat.py"


def traceback_lines(error: str, init_line: int = 637) -> list[str]:
    """A vLLM streaming traceback without prefixes, ending in `error`."""
    return [
        "Error in chat completion stream generator.",
        "Traceback (most recent call last):",
        f'  File "{VLLM_SERVING}", line 702, in chat_completion_stream_generator',
        "    harmony_parser.process(token_id)",
        f'  File "{HARMONY_INIT}", line {init_line}, in process',
        "    self._inner.process(token)",
        f"openai_harmony.HarmonyError: {error}",
    ]


def prefixed(lines: list[str], prefix: str) -> str:
    return "\n".join(prefix + line for line in lines) + "\n"


def only(text: str) -> LogError:
    found = extract_text(text)
    assert len(found) == 1, [(e.line, e.code, e.message) for e in found]
    return found[0]


LEFTOVER_SOME = 'unexpected tokens remaining in message header: Some("to=functions.get_time")'


LEFTOVER_LIST = 'unexpected tokens remaining in message header: ["I", "will", "not", "do", "that."]'
