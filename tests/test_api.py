"""The public API (harmony_doctor/__init__.py) and the shape of the package behind it."""

from __future__ import annotations

import io
import re
import subprocess
import sys
from collections import Counter
from datetime import datetime
from pathlib import Path

import polars as pl
import pytest

import harmony_doctor as hd
from harmony_doctor.harmony.vocab import Vocab
from tests.helpers import REPO, SAMPLES

SEED_IDS = (SAMPLES / "seed-multiturn-completion.json").read_text()


def test_import_loads_no_cli_and_no_heavy_library() -> None:
    code = (
        "import sys, harmony_doctor\n"
        "print([m for m in ('typer', 'rich', 'polars', 'tiktoken', 'openai_harmony', 'click')"
        " if m in sys.modules])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_every_public_name_exists_and_is_documented() -> None:
    for name in hd.__all__:
        value = getattr(hd, name)
        if callable(value):
            assert (value.__doc__ or "").strip(), f"{name} has no docstring"


def test_public_functions_are_not_shadowed_by_submodules() -> None:
    """Importing every submodule must leave the API's functions in place."""
    import harmony_doctor.cli.app
    import harmony_doctor.streams.recover  # noqa: F401

    for name in hd.__all__:
        assert not isinstance(getattr(hd, name), type(sys)), f"{name} is a module"


def test_explain_tokens_and_text_agree(vocab: Vocab) -> None:
    inp = hd.parse_tokens(SEED_IDS, vocab)
    diagnosis = hd.explain_tokens(inp, vocab)
    assert diagnosis.verdict == "fault"
    assert diagnosis.findings[0].code == "HD101"
    again = hd.explain_text(SEED_IDS, vocab)
    assert isinstance(again, hd.Diagnosis) and again.findings == diagnosis.findings
    assert hd.explain_tokens(list(inp.tokens), vocab).findings == diagnosis.findings


def test_explain_text_on_a_log_returns_its_failures() -> None:
    text = (SAMPLES / "vllm-traceback.log").read_text()
    found = hd.explain_text(text)
    assert not isinstance(found, hd.Diagnosis)
    assert [e.code for e in found.errors] == [e.code for e in hd.extract_failures(text)]
    assert found.errors and found.lines == text.count("\n")


def test_explain_input_places_a_wrapped_logs_failures_on_the_lines_given(tmp_path: Path) -> None:
    """Docker json-file lines around a traceback: the failures are found in the unwrapped
    text and reported on the lines of the file as given, as `explain FILE` reports them."""
    import json

    text = (SAMPLES / "vllm-traceback.log").read_text()
    header = json.dumps({"log": "starting\n", "stream": "stdout", "time": "2025-08-07T12:00:00Z"})
    lines = [json.dumps({"log": f"{x}\n", "stream": "stderr"}) for x in text.splitlines()]
    path = tmp_path / "container.log"
    path.write_text("\n".join([header, header, *lines]) + "\n")
    explained = hd.explain_input(hd.read_input(path))
    assert isinstance(explained, hd.ExplainedLog) and explained.check is None
    bare = hd.explain_text(text)
    assert isinstance(bare, hd.LogExplanation)
    placed = explained.explanation.errors
    assert [e.code for e in placed] == [e.code for e in bare.errors]
    assert [e.line for e in placed] == [e.line + 2 for e in bare.errors]


def test_explain_input_on_a_stream_with_the_grammar(tmp_path: Path, vocab: Vocab) -> None:
    path = tmp_path / "ids.json"
    path.write_text(SEED_IDS)
    plain = hd.explain_input(hd.read_input(path), vocab)
    assert isinstance(plain, hd.ExplainedStream) and plain.check is None
    assert plain.diagnosis.findings == hd.explain_tokens(hd.parse_tokens(SEED_IDS, vocab)).findings
    checked = hd.explain_input(hd.read_input(path), vocab, check_grammar=True)
    assert isinstance(checked, hd.ExplainedStream) and isinstance(checked.check, hd.StreamCheck)
    assert checked.check.tokens == plain.diagnosis.input.tokens
    with pytest.raises(hd.InputError, match="--role assistant"):
        hd.explain_input(hd.read_input(path), vocab, role="none", check_grammar=True)


def test_explain_input_checks_a_logs_failures_with_the_grammar() -> None:
    read = hd.read_input(SAMPLES / "vllm-traceback.log")
    explained = hd.explain_input(read, grammar_file=SAMPLES / "absent.lark")
    assert isinstance(explained, hd.ExplainedLog) and isinstance(explained.check, hd.LogCheck)
    assert explained.check.custom  # a Lark file needs token ids: a log's verdicts use the default
    verdicts = explained.check.verdicts
    assert [v.line for v in verdicts] == [e.line for e in explained.explanation.errors]


def test_scan_stream_equals_scan_paths() -> None:
    path = SAMPLES / "vllm-requests.log"
    by_path = hd.scan_paths([path])
    mtime = datetime.fromtimestamp(path.stat().st_mtime)
    by_stream = hd.scan_stream(io.BytesIO(path.read_bytes()), str(path), reference=mtime)
    assert by_stream.events == by_path.events and by_path.events
    assert sorted(by_stream.requests, key=repr) == sorted(by_path.requests, key=repr)
    table = hd.summarize(by_path, ["code"])
    assert int(table["count"].sum()) == len(by_path.events)


def _fleet_logs(root: Path) -> Path:
    """Two days of vLLM logs with requests, a log with a failure and no requests, and a link
    to nothing (listed, then skipped)."""
    from tests.scan.vllm_logs import build_logs, traceback

    root.mkdir()
    build_logs(root)
    lines = traceback(9, "11-29 12:00:00", "Unknown role: assistantassistant")
    (root / "no-requests.log").write_text("\n".join(lines) + "\n")
    (root / "gone.log").symlink_to(root / "missing")
    return root


def test_list_inputs_then_scan_inputs_with_progress(tmp_path: Path) -> None:
    logs = _fleet_logs(tmp_path / "logs")
    listing = hd.list_inputs([logs, tmp_path / "absent.log"], excludes=["quiet.log"])
    assert isinstance(listing, hd.InputListing)
    names = sorted(Path(s.label).name for s in listing.sources)
    assert names == ["no-requests.log", "vllm.log.1", "vllm.log.gz"]
    assert [Path(s.label).name for s in listing.skipped] == ["gone.log", "absent.log"]
    assert listing.bytes == sum(Path(s.label).stat().st_size for s in listing.sources)
    seen: list[hd.ScanProgress] = []
    result = hd.scan_inputs(listing, hd.ScanOptions(jobs=1), seen.append)
    assert sorted(Path(p.label).name for p in seen) == names
    assert sum(p.bytes for p in seen) == listing.bytes
    assert sum(p.failures for p in seen) == len(result.events) == 4
    assert [f.status for f in result.files].count("skipped") == 2
    again = hd.scan_paths([logs, tmp_path / "absent.log"], excludes=["quiet.log"])
    assert again.events == result.events and again.files == result.files


def test_summarize_scan_is_scans_table_totals_and_days(tmp_path: Path) -> None:
    result = hd.scan_paths([_fleet_logs(tmp_path / "logs")])
    summary = hd.summarize_scan(result, ["code,file"])
    assert isinstance(summary, hd.Summary) and summary.keys == ("code", "file")
    assert summary.table.equals(hd.summarize(result, ["code", "file"]))
    # One way to count for scan and report: the frames give what the records gave.
    assert summary.totals["rate"] == pytest.approx(3 / 13) and summary.totals["skipped"] == 1
    days = sorted(Counter(e.timestamp[:10] for e in result.events if e.timestamp).items())
    assert list(summary.days) == days and len(summary.days) == 3
    events, requests = hd.frames(result)
    assert summary.events.lazy().collect().equals(events) and summary.requests.equals(requests)
    assert pl.concat(list(summary.events.batches())).equals(events)
    assert summary.first.equals(events.head(100)) and summary.folded["n"].sum() == events.height
    assert summary.files == result.files
    empty = hd.summarize_scan(hd.merge([]))
    assert empty.days == () and empty.totals["failures"] == 0 and empty.table.height == 0


def test_group_keys_requests_path_and_tally_table(tmp_path: Path) -> None:
    assert hd.group_keys([]) == ("code",)
    assert hd.group_keys(["day,code", "code"]) == ("day", "code")
    with pytest.raises(hd.InputError, match="cannot group by 'colour'"):
        hd.group_keys(["colour"])
    assert hd.requests_path(Path("out/events.csv")) == Path("out/events.requests.csv")
    result = hd.scan_paths([_fleet_logs(tmp_path / "logs")])
    tallies = hd.tally_table(result)
    assert tallies.columns == ["file", "pid", "server", "hour", "count", "origin", "kind"]
    assert int(tallies["count"].sum()) == sum(t.count for t in result.requests) == 13


def test_summarize_event_files_sums_the_good_files_and_names_the_bad(tmp_path: Path) -> None:
    """What `report` prints, from what `scan --events` wrote: the same table, totals and days;
    a corrupt file and a file without tallies beside it are reported, not fatal."""
    from harmony_doctor.output.tables import write_tables

    result = hd.scan_paths([_fleet_logs(tmp_path / "logs")])
    events = tmp_path / "events.parquet"
    write_tables([(events, lambda: hd.frames(result)[0])])
    write_tables([(hd.requests_path(events), lambda: hd.tally_table(result))])
    alone = tmp_path / "alone" / "events.csv"  # copied without its tallies
    alone.parent.mkdir()
    write_tables([(alone, lambda: hd.frames(hd.merge([]))[0])])
    corrupt = tmp_path / "corrupt.parquet"
    corrupt.write_bytes(b"PAR1 not parquet at all PAR1")
    found = hd.summarize_event_files([events, corrupt, str(alone)], ["code"])
    assert isinstance(found, hd.EventFilesSummary)
    scanned = hd.summarize_scan(result, ["code"])
    assert found.summary.table.equals(scanned.table)
    for key in ("requests", "failures", "rate", "rate_note"):
        assert found.summary.totals[key] == scanned.totals[key]
    assert found.summary.days == scanned.days
    assert [f.path for f in found.summary.files] == [str(events), str(alone)]
    (bad,) = found.unread
    assert isinstance(bad, hd.UnreadFile) and bad.path == str(corrupt)
    assert bad.reason.startswith(f"cannot read {corrupt}: ")
    assert found.untallied == (str(alone),)
    nothing = hd.summarize_event_files([corrupt])
    assert nothing.summary.files == () and nothing.summary.table.height == 0
    assert [u.path for u in nothing.unread] == [str(corrupt)]


def test_recover_shrink_and_write_repro(tmp_path: Path, vocab: Vocab) -> None:
    inp = hd.parse_tokens(SEED_IDS, vocab)
    assert hd.recover(inp, vocab).strict.error is not None
    small = hd.shrink(inp, vocab, budget=2_000)
    assert len(small.minimal) < len(inp.tokens)
    written = hd.write_repro(small, tmp_path / "bundle", vocab, copy_vocab=False)
    assert {p.name for p in written} >= {"tokens.json", "repro.py", "ISSUE.md"}


def test_render_chat_and_grammar(vocab: Vocab) -> None:
    prompt = hd.render_chat((SAMPLES / "seed-chat.json").read_text(), vocab)
    assert vocab.decode(list(prompt.tokens[-2:])) == "<|start|>assistant"
    assert "<|channel|>" in hd.grammar_text("gbnf", tools=["get_weather"])


def test_read_input_reads_as_the_commands_read(tmp_path: Path) -> None:
    """Compressed and wrapped: the text comes back unwrapped, with the wrapper's line facts."""
    import gzip
    import json

    lines = [
        json.dumps({"log": f"line {n}\n", "stream": "stderr", "time": "2025-08-07T12:00:0{n}Z"})
        for n in range(3)
    ]
    path = tmp_path / "container.log.gz"
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    read = hd.read_input(path)
    assert isinstance(read, hd.TextInput)
    assert read.text == "line 0\nline 1\nline 2\n" and read.label == str(path)
    assert read.wrappers and len(read.meta) == 3
    assert hd.read_text(str(path)) == (read.text, read.label)
    with pytest.raises(hd.InputError, match="directory"):
        hd.read_input(tmp_path)


def test_received_is_what_a_client_gets(vocab: Vocab) -> None:
    inp = hd.parse_tokens((SAMPLES / "tool-call.harmony.txt").read_text(), vocab)
    result = hd.recover(inp, vocab)
    got = hd.received(result.strict.messages)
    assert isinstance(got, hd.Received)
    assert got.tool_recipient is not None and got.tool_recipient.startswith("functions.")
    assert hd.received([]) == hd.Received(None, None, None, None)


def test_rules_catalogue_and_one_rule() -> None:
    rules = hd.list_rules()
    codes = [r.code for r in rules]
    assert codes == sorted(codes) and "HD101" in codes
    assert all(isinstance(r, hd.Rule) and r.fix for r in rules)
    assert hd.find_rule(" hd101 ") == rules[codes.index("HD101")]
    assert hd.find_rule("HD999") is None


def test_scan_core_names_the_core() -> None:
    assert hd.scan_core() in ("native", "python")


def test_grammar_text_tools_from_a_request_and_validation(tmp_path: Path, vocab: Vocab) -> None:
    import json

    request = tmp_path / "chat.json"
    request.write_text(json.dumps({"tools": [{"function": {"name": "get_weather"}}]}))
    text = hd.grammar_text(tools=["browser.search"], tools_from=request)
    assert '("browser.search" | "functions.get_weather")' in text
    assert text == hd.grammar_text(tools=["browser.search", "get_weather"])
    # A request that declares no tools allows no recipient; no tools at all allows any.
    request.write_text(json.dumps({"tools": []}))
    assert hd.grammar_text(tools_from=request) != hd.grammar_text()
    hd.validate_grammar(text, "lark", vocab)
    hd.validate_grammar(hd.grammar_text("gbnf"), "gbnf", vocab)
    with pytest.raises(hd.DoctorError, match="llguidance refused"):
        hd.validate_grammar("start: nonsense_rule", "lark", vocab)
    with pytest.raises(hd.InputError, match="recipient"):
        hd.grammar_text(tools=["a b"])


def test_bad_input_raises_a_doctor_error(vocab: Vocab) -> None:
    with pytest.raises(hd.InputError):
        hd.parse_tokens("[1, 2, 999999999]", vocab)


def test_readme_api_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    readme = (REPO / "README.md").read_text()
    section = readme.split("## Library API", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None, "the README's API section has no python example"
    monkeypatch.chdir(REPO)
    exec(compile(code.group(1), "README.md", "exec"), {})


def test_the_cli_imports_only_the_api_output_and_the_records() -> None:
    """The contract in pyproject.toml (`make lint`) forbids cli/ the internal packages; this is
    the same rule as an allowlist, so that a package added later is not reachable either."""
    import grimp

    graph = grimp.build_graph("harmony_doctor")
    shared = {"harmony_doctor.models", "harmony_doctor.errors", "harmony_doctor.choices"}
    allowed = {"harmony_doctor", "harmony_doctor.version", *shared}
    cli = {"harmony_doctor.cli", *graph.find_descendants("harmony_doctor.cli")}
    wrong = {
        (importer, imported)
        for importer in cli
        for imported in graph.find_modules_directly_imported_by(importer)
        if imported not in allowed
        and imported not in cli
        and not imported.startswith("harmony_doctor.output.")
    }
    assert wrong == set()
    # and it does go through the API (decode through the input options it shares, in reading)
    users = {m for m in cli if "harmony_doctor" in graph.find_modules_directly_imported_by(m)}
    commands = ("explain", "grammar", "recover", "render", "report", "repro", "rules", "scan")
    assert users >= {"harmony_doctor.cli.reading", *(f"harmony_doctor.cli.{c}" for c in commands)}


def test_no_module_imports_back_into_itself() -> None:
    """No import cycle between modules: an import A -> B never has a way back B -> ... -> A."""
    import grimp

    graph = grimp.build_graph("harmony_doctor")
    # native.py imports the compiled extension, which the graph takes for the package itself
    graph.remove_import(importer="harmony_doctor.native", imported="harmony_doctor")
    modules = graph.modules - {"harmony_doctor"}
    cycles = []
    for importer in sorted(modules):
        for imported in graph.find_modules_directly_imported_by(importer) & modules:
            back = graph.find_shortest_chain(importer=imported, imported=importer)
            if back is not None:
                cycles.append((importer, *back))
    assert cycles == []


def test_no_module_is_over_600_lines() -> None:
    sizes = {
        str(p.relative_to(REPO)): len(p.read_text().splitlines())
        for p in (REPO / "harmony_doctor").rglob("*.py")
    }
    assert {name: n for name, n in sizes.items() if n > 600} == {}
