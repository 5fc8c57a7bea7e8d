"""The rich views, printed on a plain 100-column console: content shown, hostile text escaped."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console, RenderableType

from harmony_doctor.explain import LogExplanation
from harmony_doctor.faults.rules import RULES
from harmony_doctor.harmony.vocab import MESSAGE, Vocab
from harmony_doctor.inputs.tokens import parse_tokens
from harmony_doctor.logs import extract_text
from harmony_doctor.models import Received, Shrink, TokenInput
from harmony_doctor.output.catalogue_view import rule_view, rules_view
from harmony_doctor.output.explain_view import explain_view, log_explain_view
from harmony_doctor.output.prompt_view import prompt_view
from harmony_doctor.output.recover_view import next_steps_view, recover_view, repro_view
from harmony_doctor.output.scan_view import scan_view
from harmony_doctor.output.tokens import stream_text_view, token_table_view
from harmony_doctor.streams.diagnose import diagnose
from harmony_doctor.streams.recover import received, recover
from harmony_doctor.streams.render import load_chat, render_chat

HOSTILE = (
    "[bold]x[/bold] :warning: \x1b[31mred\x1b[0m \x1b]8;;http://x\x07link\x1b]8;;\x07 "
    "\u202eevil\u202c \u2028sep \x00nul [/INST] [link=http://x]y[/link]"
)
# The header carries prose, so openai-harmony raises at the <|message|> that follows it.
BROKEN = f"<|channel|>final {HOSTILE}<|message|>Hi {HOSTILE}<|return|>"


def _show(view: RenderableType) -> str:
    console = Console(file=io.StringIO(), record=True, width=100, no_color=True)
    console.print(view)
    return console.export_text()


def _assert_inert(out: str) -> None:
    """Nothing in the output can move the cursor, link, reorder or break a line, or be an emoji."""
    for char in ("\x1b", "\x07", "\x00", "\u202e", "\u202c", "\u2028"):
        assert char not in out, repr(char)
    assert "⚠" not in out


def _broken(vocab: Vocab) -> TokenInput:
    return parse_tokens(BROKEN, vocab.encode)


def test_explain_view(vocab: Vocab) -> None:
    inp = _broken(vocab)
    d = diagnose(inp, vocab, "assistant")
    raised = inp.tokens.index(MESSAGE)
    out = _show(explain_view(d, "in\x1b[2J.txt", vocab))
    _assert_inert(out)
    assert out.startswith("harmony-doctor explain  in\\x1b[2J.txt · harmony-text · ")
    assert "header_leftover" in out
    assert re.search(rf"✖ +{raised} +{MESSAGE} +<\|message\|> +openai-harmony raised here", out)
    assert ":warning: \\x1b[31mred\\x1b[0m" in out
    errors = sum(f.severity == "error" for f in d.findings)
    assert out.rstrip().endswith(f"{errors} error(s), {len(d.findings) - errors} warning(s)")
    assert errors


def test_log_explain_view() -> None:
    log = (
        "(APIServer pid=7) ERROR 11-27 10:00:05 [serving_chat.py:1145] "
        "openai_harmony.HarmonyError: unexpected tokens remaining in message header: "
        f'Some("{HOSTILE}")\n'
        "ERROR 11-27 10:00:06 openai_harmony.HarmonyError: Unknown role: [bold]:warning:\x00\n"
    )
    errors = extract_text(log)
    out = _show(log_explain_view(LogExplanation(errors, 2), "server.log", None))
    _assert_inert(out)
    assert out.startswith("harmony-doctor explain  server.log · log · 2 line(s) · 2 failure(s)")
    assert "role '[bold]:warning:\\x00'" in out
    with_refs = [e for e in errors if RULES[e.code].refs]
    assert len(re.findall(r"^  refs  ", out, re.MULTILINE)) == len(with_refs) == 1
    assert out.rstrip().endswith("2 error(s), 0 warning(s)")


def test_log_explain_view_without_failures() -> None:
    out = _show(log_explain_view(LogExplanation((), 10), "quiet.log", None))
    assert "no Harmony failure found" in out
    assert out.rstrip().endswith("0 error(s), 0 warning(s)")
    unrelated = _show(log_explain_view(LogExplanation((), 1, related=False), "x.txt", None))
    assert "NOTHING HARMONY-RELATED" in unrelated and "OK" not in unrelated


def test_recover_view_shows_what_the_caller_received(vocab: Vocab) -> None:
    rec = recover(_broken(vocab), vocab, "assistant")
    # The view decides nothing: what each parse delivered comes from the caller.
    lenient = Received(
        analysis=None, final=f"from the caller {HOSTILE}", tool_recipient=None, tool_arguments=None
    )
    out = _show(recover_view(rec, received(rec.strict.messages), lenient, "in.txt", vocab))
    _assert_inert(out)
    assert out.startswith("harmony-doctor recover  in.txt · harmony-text · ")
    final = next(line for line in out.splitlines() if line.startswith("final "))
    assert re.match(r"final +— +'from the caller +\[guessed 0-\d+\] 'Hi", final)
    assert "Salvaged pieces (token spans end-exclusive)" in out
    assert "openai-harmony parses the stream; nothing needed salvaging." not in out


def test_repro_view(vocab: Vocab) -> None:
    tokens = tuple(_broken(vocab).tokens)
    result = Shrink(
        original=tokens,
        minimal=tokens[:3],
        role="assistant",
        strict=True,
        original_error=f"unexpected tokens remaining in message header: {HOSTILE}",
        minimal_error="unexpected end",
        kind="header_leftover",
        shape="unexpected tokens remaining in message header: …",
        tests=17,
        exhausted=True,
    )
    out = _show(repro_view(result, "out\x1b[2J", ["out/tokens.json", "out/\u202erepro.py"], vocab))
    _assert_inert(out)
    assert out.startswith("harmony-doctor repro  out\\x1b[2J")
    assert f"{len(tokens)} -> 3 tokens (17 parser runs); run budget spent" in out
    assert "<|channel|>final [" in out
    assert "out/\\u202erepro.py" in out


def test_next_steps_view() -> None:
    out = _show(next_steps_view(["harmony-doctor recover 'a\x1b[2Jb.txt'"]))
    _assert_inert(out)
    assert out.splitlines()[1] == "harmony-doctor recover 'a\\x1b[2Jb.txt'"


def test_prompt_view(vocab: Vocab) -> None:
    chat = load_chat(json.dumps({"messages": [{"role": "user", "content": HOSTILE}]}))
    prompt = render_chat(chat, vocab, date="2026-11-30")
    out = _show(prompt_view(prompt, "chat.json", vocab))
    _assert_inert(out)
    assert out.startswith(
        f"harmony-doctor render  chat.json · style harmony · {len(prompt.tokens)}"
    )
    assert "<|start|>user<|message|>[bold]x[/bold] :warning: \\x1b[31mred" in out
    assert out.rstrip().endswith(f"{len(prompt.warnings)} warning(s)")


def _group(kind: str, count: int, share: float) -> dict[str, Any]:
    return {
        "kind": kind,
        "count": count,
        "share": share,
        "rate": None,
        "first_seen": "2026-01-02T03:04:05Z",
        "last_seen": None,
        "example": f"example {HOSTILE}",
    }


def test_scan_view() -> None:
    totals = {
        "files": 2,
        "bytes": 1234,
        "lines": 12345,
        "failures": 4,
        "requests": None,
        "rate": None,
        "skipped": 1,
        "partial": 0,
    }
    files: list[dict[str, Any]] = [
        {"path": "ok.log", "status": "ok", "reason": None, "lines": 10, "failures": 4},
        {
            "path": "bad\x1b]8;;http://x\x07.log",
            "status": "skipped",
            "reason": "binary \u202e",
            "lines": 0,
            "failures": 0,
        },
    ]
    days = [("2026-01-01", 1), ("2026-01-02", 3)]
    groups = [_group(f"kind {HOSTILE}", 3, 0.75), _group("other", 1, 0.25)]
    out = _show(scan_view(groups, ("kind",), totals, days, files, top=1))
    _assert_inert(out)
    assert out.startswith(
        "harmony-doctor scan  2 files · 1.2 KB · 12,345 lines · 4 failures · 1 skipped, 0 partial"
    )
    assert "… 1 more group (--top, --format csv)" in out
    assert "other" not in out  # cut by --top
    assert re.search(r"^2026-01-02 +3 +█{30}$", out, re.MULTILINE)
    assert "bad\\x1b]8;;http://x\\x07.log" in out
    assert "… 1 more file (--format json)" in out


def test_scan_view_without_failures() -> None:
    totals = {"files": 1, "bytes": 999, "lines": 3, "failures": 0}
    files = [{"path": "ok.log", "status": "ok", "reason": None, "lines": 3, "failures": 0}]
    out = _show(scan_view([], ("kind",), totals, [], files, top=20, title="report"))
    assert (
        out
        == "harmony-doctor report  1 file · 999 B · 3 lines · 0 failures\nNo Harmony failures found.\n"
    )


def test_rules_view_lists_every_rule() -> None:
    out = _show(rules_view(sorted(RULES.values(), key=lambda r: r.code)))
    codes = re.findall(r"^(HD\d+) ", out, re.MULTILINE)
    assert codes == sorted(RULES)


@pytest.mark.parametrize("code", ["HD101", "HD122"])
def test_rule_view(code: str) -> None:
    rule = RULES[code]
    out = _show(rule_view(rule))
    assert out.startswith(f" {code}   {rule.title}")
    assert ("refs" in out) == bool(rule.refs)


def test_token_views(vocab: Vocab) -> None:
    tokens = _broken(vocab).tokens
    table = _show(token_table_view(tokens, vocab))
    stream = _show(stream_text_view(tokens, vocab))
    for out in (table, stream):
        _assert_inert(out)
    at = tokens.index(MESSAGE)
    assert re.search(rf"^ +{at} +{MESSAGE} +<\|message\|> +yes *$", table, re.MULTILINE)
    assert stream.startswith("<|channel|>final [bold]x[/bold] :warning: \\x1b[31mred")


@pytest.mark.parametrize("width", [60, 80, 100])
def test_scan_table_measures_keys_as_they_are_shown(width: int) -> None:
    """The rule: a cell's width is that of its text as shown (escapes, wide characters), not
    the length of the value: a key the columns could hold whole is never folded."""
    names = ["al/e\x1b\x1b\x1b\x1bvil.log", "al/plain.log", "al/日本語のログ.log"]
    groups = [{**_group(name, 1, 1 / 3), "file": name} for name in names]
    totals = {"files": 3, "bytes": 10, "lines": 30, "failures": 3}
    files = [{"path": n, "status": "ok", "reason": None, "lines": 10, "failures": 1} for n in names]
    console = Console(file=io.StringIO(), record=True, width=width, no_color=True)
    console.print(scan_view(groups, ("file",), totals, [], files, top=10))
    out = console.export_text()
    shown = ["al/e\\x1b\\x1b\\x1b\\x1bvil.log", "al/plain.log", "al/日本語のログ.log"]
    rows = [line for line in out.splitlines() if line.startswith("al/")][:3]
    assert [row.split("  ")[0] for row in rows] == shown
    # the count column lines up, whatever the name's width in cells
    from rich.cells import cell_len

    assert len({cell_len(row[: row.index(" 1 ") + 2]) for row in rows}) == 1, rows


def _explained(tmp_path: Any, remainder: str) -> tuple[Path, str, list[int]]:
    """A vLLM error line with this header remainder, explained: the log, what explain printed,
    and each count of characters it said it left out."""
    from tests.helpers import run

    log = tmp_path / "header.log"
    log.write_text(
        "(APIServer pid=9) ERROR 03-14 08:09:10 [serving.py:830] openai_harmony.HarmonyError: "
        f"unexpected tokens remaining in message header: {remainder}\n"
    )
    result = run(["explain", str(log)])
    assert result.exit_code == 1, result.stderr
    assert len(result.stdout) < 20_000
    counts = re.findall(r"… ([\d,]+) characters …", result.stdout)
    return log, result.stdout, [int(n.replace(",", "")) for n in counts]


def test_a_long_header_is_echoed_bounded_with_what_is_left_out(tmp_path: Any) -> None:
    """The rule: a header a log carries is shown bounded wherever explain echoes it (the
    message, the header words, the header rebuilt), even off a terminal: head and tail, with
    the count of characters left out. A 300 KB header was written three times whole."""
    word = "x" * 300_000
    _, shown, left_out = _explained(tmp_path, f'Some("{word} to=functions.a")')
    assert "characters …" in shown and "to=functions.a" in shown
    assert left_out and all(200_000 < n < 300_000 for n in left_out)


def test_a_word_of_a_mebibyte_is_echoed_with_its_true_length_left_out(tmp_path: Any) -> None:
    """A remainder word is held to its ends past logs/words.py MAX_WORD (a list element of a
    mebibyte was kept and classified whole); what explain says is left out of it is counted
    from the word as logged, not from the ends held."""
    from tests.helpers import run

    word = "a" * 300 + "m" * (1 << 20) + "z" * 300
    log, _, left_out = _explained(tmp_path, f'["{word}", "json"]')
    # the header words' echo: the word less the 100 characters shown of each end
    assert len(word) - 200 in left_out, left_out
    assert all(n > (1 << 20) - 4_000 for n in left_out), left_out  # every echo: the true length
    as_json = run(["explain", str(log), "--format", "json"])
    header = json.loads(as_json.stdout)["findings"][0]["header"]
    assert header["cut_characters"] == len(word) - 1024
    assert header["words"][0].startswith("a" * 300) and header["words"][-1] == "json"
