"""cli/app.py and the commands: exit codes, stdin, JSON contract, colour, one-line errors."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import SAMPLES, run

SEED = str(SAMPLES / "seed-multiturn-completion.json")
CLEAN = str(SAMPLES / "tool-call.harmony.txt")


def test_explain_exit_codes() -> None:
    assert run(["explain", SEED]).exit_code == 1
    assert run(["explain", CLEAN]).exit_code == 0
    assert run(["explain", "--exit-zero", SEED]).exit_code == 0


def test_explain_json_contract() -> None:
    result = run(["explain", "--format", "json", SEED])
    assert result.exit_code == 1 and result.stderr == ""
    doc = json.loads(result.stdout)
    assert doc["schema"] == "harmony-doctor.explain/1"
    assert doc["input"]["detected"] == "tokens" and doc["input"]["truncated"] is False
    assert doc["verdict"] == "fault"
    (finding,) = doc["findings"]
    for key in (
        "kind",
        "code",
        "severity",
        "title",
        "raise_index",
        "origin_index",
        "message_index",
        "harmony_error",
    ):
        assert key in finding
    assert finding["kind"] == "header_leftover" and finding["severity"] == "error"
    assert finding["origin_index"] == 0 < finding["raise_index"]
    assert finding["harmony_error"].startswith("unexpected tokens remaining in message header")
    assert isinstance(doc["messages"], list)


def test_stdin_dash_and_implicit_stdin() -> None:
    text = "<|channel|>final<|message|>ok<|end|><|return|>"
    for args in (["explain", "-"], ["explain"]):
        result = run(args, text)
        assert result.exit_code == 1
        assert "HD111" in result.stdout


def test_no_input_on_a_terminal_is_an_error() -> None:
    result = run(["explain"], None)
    assert result.exit_code == 2
    assert (
        result.stderr
        == "harmony-doctor: error: no input: give a file, or pipe text to standard input\n"
    )


@pytest.mark.parametrize(
    "args",
    [["explain", "--bogus"], ["explain", "--role", "robot", "-"], ["nope"], ["explain", "a", "b"]],
)
def test_usage_errors_are_one_line_exit_2(args: list[str]) -> None:
    result = run(args, "")
    assert result.exit_code == 2
    assert result.stderr.startswith("harmony-doctor: error: ")
    assert result.stderr.count("\n") == 1


def test_input_errors_are_one_line_exit_2(tmp_path: object) -> None:
    for stdin in ("", "1 2 300000", "[1, 2, -3]"):
        result = run(["explain", "-"], stdin)
        assert result.exit_code == 2
        assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
        assert result.stdout == ""


def test_text_without_failures_is_clean() -> None:
    result = run(["explain", "-"], "just some words, no failure here")
    assert result.exit_code == 0 and result.stderr == ""


def test_directory_is_refused() -> None:
    result = run(["explain", str(SAMPLES)])
    assert result.exit_code == 2 and "is a directory" in result.stderr


def test_no_color_by_default_and_colour_on_request() -> None:
    plain = run(["explain", SEED])
    assert "\x1b[" not in plain.stdout
    coloured = run(["explain", "--color", "always", SEED])
    assert "\x1b[" in coloured.stdout


def test_decode_text_tokens_and_json() -> None:
    assert run(["decode", CLEAN]).stdout.startswith("<|channel|>analysis<|message|>User asks")
    table = run(["decode", "--tokens", CLEAN]).stdout.splitlines()
    assert table[0].split() == ["index", "id", "token", "special"]
    assert table[1].split() == ["0", "200005", "<|channel|>", "yes"]
    doc = json.loads(run(["decode", "--format", "json", CLEAN]).stdout)
    assert doc["schema"] == "harmony-doctor.decode/1"
    assert doc["tokens"][0] == {"index": 0, "id": 200005, "text": "<|channel|>", "special": True}
    assert doc["text"].endswith("<|call|>")


def test_lenient_and_role_none() -> None:
    refusal = "I'm sorry, but I can't help with that.<|end|>"
    assert run(["explain", "-"], refusal).exit_code == 1
    assert run(["explain", "--lenient", "-"], refusal).exit_code == 0
    conversation = (
        "<|start|>user<|message|>hi<|end|><|start|>assistant<|channel|>final<|message|>yo<|return|>"
    )
    assert run(["explain", "--role", "none", "-"], conversation).exit_code == 0


def test_help_does_not_load_heavy_modules() -> None:
    code = (
        "import sys\n"
        "from harmony_doctor.cli import app as cli\n"
        "try:\n    cli.main(['--help'])\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('tiktoken', 'openai_harmony', 'polars') if m in sys.modules]\n"
        "print(heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_python_dash_m_entry_point() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "harmony_doctor", "--version"], capture_output=True, text=True
    )
    assert out.returncode == 0 and out.stdout.startswith("harmony-doctor ")


# --- issue 10: the two bugs the one reader and the one escaper fixed ---------------------------


def _codes(stdout: str) -> list[str]:
    return [f["code"] for f in json.loads(stdout)["findings"]]


def test_explain_reads_compressed_logs_through_the_one_reader(tmp_path: Path) -> None:
    log = (SAMPLES / "vllm-traceback.log").read_bytes()
    packed = tmp_path / "vllm.log.gz"
    packed.write_bytes(gzip.compress(log))
    plain = run(["explain", "-f", "json", str(SAMPLES / "vllm-traceback.log")])
    result = run(["explain", "-f", "json", str(packed)])
    assert result.exit_code == plain.exit_code == 1
    assert _codes(result.stdout) == _codes(plain.stdout) != []


def test_file_names_on_stderr_go_through_the_escaper(tmp_path: Path) -> None:
    name = "evil\x1b]0;owned\x07\u202e\u2028.log.gz"
    (tmp_path / name).write_bytes(b"\x1f\x8b\x08\x00garbage that is not deflate")
    result = run(["scan", "-j", "1", str(tmp_path)])
    assert result.exit_code == 2
    line = next(x for x in result.stderr.splitlines() if "evil" in x)
    assert not any(c in line for c in "\x1b\x07\u202e\u2028")
    assert "\\x1b" in line and "\\u202e" in line


# --- issue 12: output that pipes --------------------------------------------------------------


def test_piped_output_is_never_wrapped_or_cut() -> None:
    """Off a terminal (as here) lines are whole: the title, long paths, the messages table."""
    result = run(["explain", SEED])
    title = result.stdout.splitlines()[0]
    assert title.endswith("role assistant · strict") and len(title) > 100
    assert "…" not in result.stdout.split("Messages")[0].split("header 0-43")[0]


def test_width_lays_views_out_for_a_terminal() -> None:
    narrow = run(["explain", "--width", "80", SEED]).stdout
    assert max(len(line) for line in narrow.splitlines()) <= 80
    wide = run(["explain", "--width", "200", SEED]).stdout
    assert max(len(line) for line in wide.splitlines()) <= 200
    assert len(wide.splitlines()) < len(narrow.splitlines())


# --- issue 12: manners -------------------------------------------------------------------------


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_shell_completion_scripts_and_answers(shell: str) -> None:
    env = {**os.environ, "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}
    script = subprocess.run(
        [sys.executable, "-m", "harmony_doctor", "--show-completion", shell],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert script.returncode == 0, script.stderr
    assert "_HARMONY_DOCTOR_COMPLETE" in script.stdout
    answer = subprocess.run(
        [sys.executable, "-c", "from harmony_doctor.cli.app import main; main()"],
        capture_output=True,
        text=True,
        check=False,
        env={
            **env,
            "_HARMONY_DOCTOR_COMPLETE": "complete_bash",
            "COMP_WORDS": "harmony-doctor ex",
            "COMP_CWORD": "1",
        },
    )
    assert answer.stdout.split() == ["explain"]


def test_usage_errors_name_the_program_once() -> None:
    root = run(["--bogus"])
    assert root.exit_code == 2 and root.stdout == ""
    assert root.stderr.count("harmony-doctor") == 2  # the prefix, then the --help hint
    assert "(see 'harmony-doctor --help')" in root.stderr
    bad_choice = run(["explain", "--format", "yaml", "x"])
    assert bad_choice.exit_code == 2 and "Value error" not in bad_choice.stderr
    assert "(see 'harmony-doctor explain --help')" in bad_choice.stderr


_PIPED = {
    "decode": ["decode", "--tokens", SEED],
    "explain": ["explain", str(SAMPLES / "vllm-traceback.log")],
    "scan": ["scan", "-j", "1", "--format", "csv", str(SAMPLES / "vllm-requests.log")],
}


@pytest.mark.parametrize("command", ["decode", "explain", "scan"])
def test_a_closed_pipe_ends_every_command_the_same_quiet_way(command: str) -> None:
    """`cmd | head -1`: no traceback, nothing on stderr, exit 141 (128 + SIGPIPE).

    The reader is gone before the command writes (this sandbox's pipes do not report a reader
    that leaves mid-stream, so the test closes it first; the error raised is the same)."""
    args = _PIPED[command]
    read_end, write_end = os.pipe()
    os.close(read_end)
    proc = subprocess.Popen(
        [sys.executable, "-m", "harmony_doctor", *args], stdout=write_end, stderr=subprocess.PIPE
    )
    os.close(write_end)
    _, err = proc.communicate()
    assert proc.returncode == 141, err
    assert err == b""
