"""Any excerpt, pasted in any shape people paste in, is explained as the bare excerpt is.

Excerpts are the samples and the bare texts of the real pastes (a fenced block alone, or a
paste with no furniture). Each is wrapped in every shape the paste reader undoes: a Markdown
quote, a fence, a table with escaped pipes, CI stamps (GitHub Actions, Buildkite), pytest's
`E` lines, and for logs a blank line after every line and a traceback flattened onto one line
(`\\n` written out). The findings (code, token, server, and a stream's raise index) must not
change. Nothing here knows any one excerpt: the wrappers are applied to all of them alike.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from harmony_doctor.inputs.paste import read_paste
from tests.helpers import SAMPLES
from tests.pastes.findings import Seen, findings, is_stream

TEXTS = Path(__file__).parent / "texts"
SAMPLE_FILES = [
    "vllm-traceback.log",
    "lmdeploy.log",
    "other-engines.log",
    "sglang-exception-group.log",
    "error-bodies.txt",
    "vllm-requests.log",
    "tool-call.harmony.txt",
    "duplicate-recipient.ids",
    "ignore-eos.json",
    "seed-multiturn-completion.json",
]


def _excerpts() -> dict[str, str]:
    found = {name: (SAMPLES / name).read_text() for name in SAMPLE_FILES}
    for path in sorted(TEXTS.iterdir()):
        text = path.read_text()
        paste = read_paste(text)
        if not paste.shapes:
            found[path.name[:3]] = text
        elif paste.shapes == {"fence"} and len(paste.pieces) == 1 and not paste.captions:
            found[path.name[:3]] = paste.pieces[0].text
    return {name: text.strip("\n") for name, text in found.items() if text.strip()}


EXCERPTS = _excerpts()
_LOG_START = re.compile(
    r"^\s*(?:Traceback|File \"|\(\w+ pid=|[\w.]+(?:Error|Exception)\b|ERROR|INFO)"
)


def _is_log(text: str) -> bool:
    return not text.lstrip().startswith(("<|", "{", "[", "data:")) and not text[:1].isdigit()


def quote(text: str) -> str:
    return "\n".join(f"> {line}" if line else ">" for line in text.split("\n"))


def fence(text: str) -> str:
    return f"```text\n{text}\n```\n"


def captioned_fence(text: str) -> str:
    return f"## What came back\n\n**Output:**\n\n```\n{text}\n```\n"


def table(text: str) -> str:
    rows = "\n".join(f"| {line.replace('|', chr(92) + '|')} |" for line in text.split("\n"))
    return f"| output |\n|---|\n{rows}\n"


def github_actions(text: str) -> str:
    return "\n".join(
        f"2025-09-16T22:18:58.{n:07d}Z {line}" for n, line in enumerate(text.split("\n"))
    )


def buildkite(text: str) -> str:
    return "\n".join(f"[2025-09-16T22:18:58Z] {line}" for line in text.split("\n"))


def pytest_lines(text: str) -> str:
    return "\n".join(f"E       {line}" for line in text.split("\n"))


def blank_lines(text: str) -> str:
    return "\n\n".join(text.split("\n"))


def flattened(text: str) -> str:
    return "\\n".join(text.split("\n"))


def _table_keeps(text: str) -> bool:
    return all(line == line.strip() for line in text.split("\n")) or _is_log(text)


def _doubles(text: str) -> bool:
    lines = text.split("\n")
    return _is_log(text) and len(lines) >= 3 and all(line.strip() for line in lines)


def _flattens(text: str) -> bool:
    lines = text.split("\n")
    return (
        _doubles(text)
        and "\\n" not in text
        and not lines[0].lstrip().startswith(("{", "[", '"', "'"))
        and any(_LOG_START.match(line) for line in lines[1:])
    )


SHAPES: dict[str, tuple[Callable[[str], str], Callable[[str], bool]]] = {
    "quote": (quote, lambda text: True),
    "fence": (fence, lambda text: True),
    "captioned-fence": (captioned_fence, lambda text: True),
    "table": (table, _table_keeps),
    "github-actions": (github_actions, lambda text: True),
    "buildkite": (buildkite, lambda text: True),
    "pytest": (pytest_lines, _is_log),
    "blank-lines": (blank_lines, _doubles),
    "flattened": (flattened, _flattens),
}
CASES = [
    (name, shape)
    for name, text in EXCERPTS.items()
    for shape, (_, applies) in SHAPES.items()
    if applies(text)
]


def test_the_excerpts_cover_logs_streams_and_every_shape() -> None:
    assert len(EXCERPTS) >= 30
    assert sum(not _is_log(t) for t in EXCERPTS.values()) >= 5
    assert {shape for _, shape in CASES} == set(SHAPES)
    assert sum(shape == "flattened" for _, shape in CASES) >= 3
    assert sum(bool(findings(t)) for t in EXCERPTS.values()) >= 20


@pytest.mark.parametrize(("name", "shape"), CASES, ids=[f"{n}-{s}" for n, s in CASES])
def test_a_wrapped_excerpt_is_explained_as_the_bare_one(name: str, shape: str) -> None:
    text = EXCERPTS[name]
    wrap = SHAPES[shape][0]
    expected = findings(text)
    if shape == "captioned-fence" and not expected and is_stream(text):
        # A clean completion a paste captions as what came back was shown to a user as text:
        # the server returned Harmony unparsed (HD205). Only a caption says so.
        expected = (Seen("HD205", None, None),)
    assert findings(wrap(text)) == expected
