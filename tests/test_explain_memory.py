"""Any content, one bound: `explain` holds the input it explains once, never copies of it or of
its parts, and reads a very long line in linear time (issue 34). Measured in a fresh process
(tests/peak.py); sizes are kept to seconds."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harmony_doctor.logs.words import HEAD_WORDS, TAIL_WORDS
from tests.peak import peak_of
from tests.scan.test_memory_bound import _ERROR, _SHAPES

_HANG = 300  # seconds: only a hang takes this long (the quadratic case took over 15 minutes)


@settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    st.lists(st.tuples(st.sampled_from(sorted(_SHAPES)), st.integers(1, 4)), min_size=1, max_size=3)
)
def test_explain_of_any_shape_stays_under_the_bound(
    tmp_path: Path, shapes: list[tuple[str, int]]
) -> None:
    path = tmp_path / f"case{len(list(tmp_path.iterdir()))}.log"
    path.write_bytes(b"".join(_SHAPES[shape](size) for shape, size in shapes))
    run = peak_of(["explain", str(path), "--format", "json"], tmp_path, hang=_HANG)
    assert run.exit_code in (0, 1, 2), run.stderr
    assert "Traceback" not in run.stderr
    assert run.within_bound, f"{run} for {shapes}"


def test_ten_header_lines_of_a_mebibyte_are_read_in_a_window_that_says_so(tmp_path: Path) -> None:
    """Each remainder was held as a million words and re-tokenized whole (2,686 MiB peak)."""
    words = 200_000
    line = _ERROR.format(1) + 'unexpected tokens remaining in message header: Some("to=f {}")\n'
    path = tmp_path / "headers.log"
    path.write_text("".join(line.format(f"w{n} " * words) for n in range(10)))
    run = peak_of(["explain", str(path), "--format", "json"], tmp_path, hang=_HANG)
    assert run.exit_code == 1, run.stderr
    findings = json.loads(run.stdout)["findings"]
    assert len(findings) == 10
    for found in findings:
        header = found["header"]
        assert len(header["words"]) == HEAD_WORDS + TAIL_WORDS
        assert header["unread_words"] == words + 1 - HEAD_WORDS - TAIL_WORDS  # `to=f` too
        assert header["words"][-1] == f"w{found['line'] - 1}"
    assert run.within_bound, str(run)
    text = peak_of(["explain", str(path)], tmp_path, hang=_HANG)
    unread = f"{words + 1 - HEAD_WORDS - TAIL_WORDS:,} words in the middle not read"
    assert text.stdout.count(unread) == 10, text.stdout[-2000:]


def test_a_line_of_megabytes_of_letters_is_read_in_linear_time(tmp_path: Path) -> None:
    """A key was tried at every letter of the run (evidence/ids.py): 6 MB took over 15 minutes;
    3 MB took minutes, and now takes seconds (the limit only catches that hang)."""
    path = tmp_path / "letters.log"
    path.write_bytes(b"x" * 3_000_000 + b"\n")
    run = peak_of(["explain", str(path), "--format", "json"], tmp_path, hang=120)
    assert run.exit_code == 0, run.stderr
    assert json.loads(run.stdout)["input"]["harmony_related"] is False
    assert run.within_bound, str(run)


def test_a_paste_of_many_id_runs_is_read_in_linear_time(tmp_path: Path) -> None:
    """Each id run counted its line from the top of the paste and was checked against every run
    kept before it (evidence/ids.py): 40,000 runs took 45 s, 200,000 would take about 20
    minutes; now seconds (the limit only catches that hang)."""
    path = tmp_path / "runs.txt"
    path.write_text(
        "".join(
            f"run {n}: [200006, 173781, 200008, {1000 + n % 500}, 1001, 200002]\n"
            for n in range(200_000)
        )
    )
    run = peak_of(["explain", str(path), "--format", "json"], tmp_path, hang=_HANG)
    assert run.exit_code in (0, 1), run.stderr
    assert json.loads(run.stdout)["completions"], run.stdout[:2000]  # the runs were read as ids
    # Every run was held with a set of all seen (240 MiB); now a line's runs at a time.
    assert run.within_bound, str(run)


def _vllm_log(size: int) -> bytes:
    """A vLLM log with --enable-log-requests/outputs: every request's prompt ids, one in 20
    answered with output ids, one in 200 failing; `size` bytes or a little more."""
    prompt = ", ".join(str(1000 + n * 7) for n in range(100))
    lines: list[bytes] = []
    written, kept, n = 0, 0, 0
    while written < size:
        head = f"(APIServer pid=7) INFO 11-28 10:{n // 60 % 60:02d}:{n % 60:02d} [logger.py:43] "
        lines.append(
            f"{head}Received request chatcmpl-{n}: prompt: None, prompt_token_ids: "
            f"[200006, 17360, 200008, {prompt}, 200007].\n".encode()
        )
        if n % 20 == 0:
            lines.append(
                f"{head}Generated response chatcmpl-{n}: output: 'x', output_token_ids: "
                "[200005, 35644, 200008, 1844, 200007, 200006, 173781, 200005, 17196, 200008, "
                "525, 200002], finish_reason: stop\n".encode()
            )
        if n % 200 == 0:
            lines.append((_ERROR.format(n % 60) + "Unknown role: assistantassistant\n").encode())
        written += sum(map(len, lines[kept:]))
        kept, n = len(lines), n + 1
    return b"".join(lines)


def test_explain_of_the_largest_log_it_reads_stays_under_the_bound(tmp_path: Path) -> None:
    """A 117 MB vLLM log took 339 MiB (the text, a copy of it as a list of lines, every
    request's prompt ids, openai-harmony's tables): inputs read whole stop at 32 MiB now, and
    one of that size stays under the bound."""
    path = tmp_path / "vllm.log"
    path.write_bytes(_vllm_log(31 << 20))
    run = peak_of(["explain", str(path), "--format", "json"], tmp_path, hang=_HANG)
    assert run.exit_code == 1, run.stderr
    assert json.loads(run.stdout)["completions"]  # the logged completions were replayed
    assert run.within_bound, str(run)
    with path.open("ab") as more:
        more.write(_vllm_log(2 << 20))
    past = peak_of(["explain", str(path)], tmp_path, hang=_HANG)
    assert past.exit_code == 2 and "is larger than 32 MiB" in past.stderr
