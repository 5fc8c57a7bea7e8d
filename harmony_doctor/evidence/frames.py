"""A traceback cut before its exception line: its frames alone say where it broke.

A person pastes a log as far as it fits, and the line that names the exception is often what
falls off. When the innermost frames are the Harmony prompt renderer's (openai-harmony's
`render_conversation*`, a server's `render_for_completion` around it), the request failed while
its conversation was being rendered into a prompt (HD175), whatever the exception was.
"""

from __future__ import annotations

from typing import Final

from harmony_doctor.faults import rules
from harmony_doctor.lazy_regex import Pattern
from harmony_doctor.logs.describe import unparsed
from harmony_doctor.models import LogError

_FRAME: Final = Pattern(r"""\bFile\s+["'][^"']+["']""")
# The renderer's entry points: openai-harmony's, and the wrappers servers put around them.
_RENDER: Final = Pattern(r"\brender_(?:conversation\w*|for_completion)\b")
# A line that names an exception: `ValueError: ...`, `openai_harmony.HarmonyError: ...`.
_EXCEPTION: Final = Pattern(r"(?:^|[\s\]])(?:[A-Za-z_]\w*\.)*[A-Za-z_]*(?:Error|Exception)\b\s*:")
# How many innermost frames (with their code lines) may name the renderer.
_INNERMOST: Final = 3


def cut_render(text: str) -> LogError | None:
    """The rendering failure a traceback cut before its exception line shows (HD175): its
    innermost frames name the Harmony renderer, and no line after them names an exception."""
    lines = text.split("\n")
    frames = [index for index, line in enumerate(lines) if _FRAME.search(line)]
    if not frames:
        return None
    last = frames[-1]
    if any(_EXCEPTION.search(line) for line in lines[last + 1 :]):
        return None  # it has its exception: the log readers judge it
    inner = frames[-_INNERMOST:]
    if _RENDER.search("\n".join(lines[inner[0] : last + 2])) is None:
        return None
    index, called = next(
        (i, found)
        for i in range(inner[0], min(last + 2, len(lines)))
        if (found := _RENDER.search(lines[i])) is not None
    )
    return unparsed(
        rules.RULES["HD175"],
        (index + 1, index + 1),
        _code(lines[index], called.start()),
        lines[index],
        "a conversation the Harmony renderer can render into a prompt",
        f"a traceback through {called.group(0)} cut before its exception line: the request "
        "failed while its conversation was being rendered",
    )


def _code(line: str, at: int) -> str:
    """The frame's line without a log record's prefix (`... [serving_chat.py:245]`)."""
    cut = line.rfind("] ", 0, at)
    return line[cut + 2 if cut >= 0 else 0 :].strip()
