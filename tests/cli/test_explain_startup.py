"""What `explain` of a server log builds and loads at start-up (its latency is benchmarked in
benchmarks/startup.py, `explain traceback`, never asserted here): only what the log's failures
need, in a fresh process as the command line runs it, and the same output as before."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from rich.text import Text

import harmony_doctor as hd
from harmony_doctor.errors import DoctorError
from harmony_doctor.harmony.vocab import FIRST_SPECIAL, VOCAB_SIZE
from harmony_doctor.logs import extract_text
from harmony_doctor.output.explain_view import (
    Grid,
    Line,
    _log_token,
    _text,
    _written,
    log_explain_plain,
    names_need_vocab,
)
from harmony_doctor.output.layout import UNLIMITED
from tests.helpers import CASES, run

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples"
TRACEBACK = str(SAMPLES / "vllm-traceback.log")
_EXPLAINED = [n.stem for n in CASES.glob("*.cmd") if n.read_text().startswith("explain")]
# Every input explain reads in the tests: the samples, the real pastes, the golden cases'.
INPUTS = sorted(
    [
        *SAMPLES.iterdir(),
        *(ROOT / "tests" / "pastes" / "texts").iterdir(),
        *(p for n in _EXPLAINED if (p := CASES / f"{n}.in").exists()),
    ]
)


def _after_explain(probe: str, args: list[str] | None = None) -> Any:
    """The value of the expression `probe` in a fresh process after `harmony-doctor explain`
    (of the traceback sample unless `args` say otherwise) wrote to a pipe."""
    code = (
        "import sys\n"
        "from harmony_doctor.cli import app as cli\n"
        f"try:\n    cli.main({['explain', *(args or [TRACEBACK])]!r})\n"
        "except SystemExit:\n    pass\n"
        f"print(repr({probe}), file=sys.stderr)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return ast.literal_eval(out.stderr.strip().splitlines()[-1])


_VOCABS_LOADED = "len(sys.modules['harmony_doctor.harmony.vocab']._CACHE)"


def test_a_log_whose_tokens_are_special_is_shown_without_the_vocabulary() -> None:
    """The traceback's HD111 names <|return|> (200002): its name needs no vocabulary (reading
    and verifying the 3.6 MB file costs about 8 ms); JSON, which gives every token's text
    and re-tokenizes header words, still loads it."""
    assert names_need_vocab(extract_text(Path(TRACEBACK).read_text())) is False
    assert _after_explain(_VOCABS_LOADED) == 0
    assert _after_explain(_VOCABS_LOADED, [TRACEBACK, "--format", "json"]) == 1


def test_a_special_token_is_named_alike_with_and_without_the_vocabulary(vocab: Any) -> None:
    for token in range(FIRST_SPECIAL, VOCAB_SIZE + 1):
        named, bare = _log_token(token, vocab), _log_token(token, None)
        assert isinstance(named, Text) and isinstance(bare, Line)
        assert (named.plain, named.spans, named.style) == (
            _text(bare).plain,
            _text(bare).spans,
            _text(bare).style,
        ), token


def test_an_ordinary_token_of_a_log_needs_the_vocabulary() -> None:
    log = (
        "ERROR 11-27 10:00:05 [serving_chat.py:1145] openai_harmony.HarmonyError: "
        "Unexpected token 12606 while expecting start token 200006\n"
    )
    errors = extract_text(log)
    assert [e.token for e in errors] == [12606]
    assert names_need_vocab(errors)


@pytest.mark.parametrize("path", INPUTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_explain_off_a_terminal_writes_what_rich_writes(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A log's view written plain (log_explain_plain) is byte for byte what rich writes off a
    terminal: `--width` (as wide as off a terminal) draws it with rich."""
    written = run(["explain", str(path)])
    drawn = run(["explain", str(path), "--width", str(UNLIMITED)])
    assert written == drawn
    assert run(["explain", str(path), "--color", "never"]) == drawn
    monkeypatch.setenv("NO_COLOR", "1")
    assert run(["explain", str(path)]) == drawn


def _log(path: Path) -> tuple[str, hd.LogExplanation] | None:
    """The label and the explanation of the log in `path`; None when it is not a log."""
    read = hd.read_input(str(path))
    try:
        explained = hd.explain(read)
    except DoctorError:  # a chat request, ids out of range...: explain says why and exits 2
        return None
    if not isinstance(explained, hd.ExplainedLog):
        return None
    return read.label, explained.explanation


def _plain(path: Path) -> str | None:
    """`log_explain_plain` of what explain reads in `path` (None too when it is no log)."""
    log = _log(path)
    if log is None:
        return None
    label, found = log
    vocab = hd.load_vocab() if names_need_vocab(found.errors) or found.completions else None
    return log_explain_plain(found, label, vocab)


def test_every_log_without_completions_is_written_plain() -> None:
    """Only a table of replayed completions, or a character safe_text escapes, needs rich:
    every other log the inputs hold is written plain (the test above then compares the plain
    writer with rich, not rich with itself)."""
    logs = escaped = 0
    for path in INPUTS:
        log = _log(path)
        if log is None or log[1].completions:
            continue
        logs += 1
        if _plain(path) is None:  # rich wrote an escape (`\n`, `\x1b`, `\u202e`...)
            drawn = run(["explain", str(path), "--width", str(UNLIMITED)]).stdout
            assert re.search(r"\\[ntxuU]", drawn), path
            escaped += 1
    assert logs > 100 and escaped <= logs // 10, (logs, escaped)
    assert _plain(SAMPLES / "vllm-requests.log") is None  # its completions: a table


def test_what_only_rich_writes_alike_is_left_to_rich() -> None:
    """A tab rich expands, a newline it breaks a grid's cell on, a line it would fold at the
    width: not written plain."""
    said = Line("", (("a", "", False),))
    assert _written([said, "separator", Grid("facts", (("line", "1"),))]) == (
        "a\n" + "─" * 100 + "\n\n  line  1\n"
    )
    assert _written([Line("", (("a\tb", "", False),))]) is None
    assert _written([Grid("advice", (("why", "a\nb"),))]) is None
    assert _written([Line("", (("x" * (UNLIMITED // 2), "", False),))]) is None
    # what safe_text escapes is left to it
    assert _written([Line("", (("a\x1b[2Jb", "", True),))]) is None
    assert _written([Line("", (("a\u202eb", "", True),))]) is None


def test_a_header_wider_than_the_width_is_left_to_rich(tmp_path: Path) -> None:
    """Off a terminal every header word is shown: past the console's width rich folds the
    line, so the view is not written plain."""
    words = " ".join(f"w{n:03d}" + "y" * 190 for n in range(600))
    log = tmp_path / "wide.log"
    log.write_text(
        "ERROR 11-27 10:00:05 [serving_chat.py:1145] openai_harmony.HarmonyError: "
        f'unexpected tokens remaining in message header: Some("{words}")\n'
    )
    assert _plain(log) is None
    written = run(["explain", str(log)])
    assert written.exit_code == 1 and "w599" in written.stdout
    assert written == run(["explain", str(log), "--width", str(UNLIMITED)])


_RICH = ("rich", "rich.text", "rich.console", "rich.table")


@pytest.mark.parametrize(
    ("args", "loaded"),
    [([TRACEBACK], []), ([TRACEBACK, "--color", "always"], list(_RICH))],
    ids=["pipe", "color-always"],
)
def test_a_log_written_plain_loads_no_rich(args: list[str], loaded: list[str]) -> None:
    """Off a terminal the traceback's view is written without rich; on one (colour forced)
    rich draws it."""
    probe = f"[m for m in {_RICH!r} if m in sys.modules]"
    assert _after_explain(probe, args) == loaded


def test_on_a_stream_that_is_not_utf_8_the_view_is_what_rich_writes() -> None:
    """Rich may draw the separator with `-` where standard output cannot encode `─` (its
    Rule means to, for a rule with a title): there the view is left to rich, and is the same."""

    def shown(*extra: str) -> bytes:
        command = ["-m", "harmony_doctor", "explain", TRACEBACK, *extra]
        env = dict(os.environ, PYTHONIOENCODING="ascii:backslashreplace")
        done = subprocess.run([sys.executable, *command], capture_output=True, env=env)
        assert done.returncode == 1, done.stderr
        return done.stdout

    assert shown() == shown("--width", str(UNLIMITED))


def test_a_traceback_loads_no_reader_of_other_texts() -> None:
    """Descriptions, markup leaks, quoted ids and frames (evidence/) are read in what a
    traceback does not show: their readers are not imported (evidence/combine.py imports each
    where first asked), and another model family's patterns (logs/families.py) are compiled
    where first used (lazy_regex.py), not at import."""
    readers = [f"harmony_doctor.evidence.{name}" for name in ("prose", "markup", "ids", "frames")]
    assert _after_explain(f"[m for m in {readers!r} if m in sys.modules]") == []
    families = (
        "[(k, 'compiled' in vars(v)) for k, v in vars(sys.modules['harmony_doctor.logs.families'])"
        ".items() if type(v).__module__ == 'harmony_doctor.lazy_regex']"
    )
    found = _after_explain(families)
    assert len(found) == 4
    assert [name for name, compiled in found if compiled] == []
