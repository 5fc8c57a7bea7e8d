"""The public API (harmony_doctor/__init__.py) and the shape of the package behind it."""

from __future__ import annotations

import io
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


def test_the_cli_imports_only_the_api_output_and_the_records() -> None:
    """The contract in pyproject.toml (`make lint`) forbids cli/ the internal packages; this is
    the same rule as an allowlist, so that a package added later is not reachable either."""
    import grimp

    graph = grimp.build_graph("harmony_doctor")
    shared = {"harmony_doctor.models", "harmony_doctor.errors", "harmony_doctor.choices"}
    allowed = {"harmony_doctor", "harmony_doctor.advanced", "harmony_doctor.version", *shared}
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
    api = {"harmony_doctor", "harmony_doctor.advanced"}
    users = {m for m in cli if api & graph.find_modules_directly_imported_by(m)}
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


# --- the dozen verbs ----------------------------------------------------------------------

RECORDS = {
    "Diagnosis", "EventFilesSummary", "ExplainedLog", "ExplainedStream", "FileScan", "Finding",
    "LogError", "LogExplanation", "Recovery", "RenderedPrompt", "Rule", "ScanEvent",
    "ScanOptions", "ScanResult", "Shrink", "Summary", "TextInput", "TokenInput", "Vocab",
}  # fmt: skip
ERRORS = {"DoctorError", "InputError", "VocabError", "__version__"}


def test_the_top_level_is_a_dozen_verbs_and_their_records() -> None:
    import inspect

    assert len(hd.VERBS) <= 15
    assert set(hd.__all__) == set(hd.VERBS) | RECORDS | ERRORS
    for name in hd.VERBS:
        verb = getattr(hd, name)
        assert inspect.isfunction(verb) and verb.__module__ == "harmony_doctor", name
        assert (verb.__doc__ or "").strip(), f"{name} has no docstring"
        hints = inspect.get_annotations(verb)
        assert "return" in hints and all(p in hints for p in inspect.signature(verb).parameters)
    for name in RECORDS:
        assert isinstance(getattr(hd, name), type) and getattr(hd, name).__doc__, name


def test_the_first_releases_names_answer_from_advanced() -> None:
    from harmony_doctor import advanced

    old = {"explain_tokens", "explain_text", "explain_input", "scan_paths", "summarize_scan",
           "list_inputs", "scan_rotated", "frames", "render_chat", "grammar_text", "list_rules",
           "find_rule", "shrink", "write_repro", "Watcher", "metrics_registry", "scan_core"}  # fmt: skip
    assert old <= set(advanced.__all__)
    for name in old:
        assert getattr(hd, name) is getattr(advanced, name), name
        assert name not in hd.__all__
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        _ = hd.nothing_here


def test_explain_takes_an_input_a_text_or_ids(vocab: Vocab) -> None:
    read = hd.read_input(SAMPLES / "seed-multiturn-completion.json")
    stream = hd.explain(read, vocab)
    assert isinstance(stream, hd.ExplainedStream)
    assert stream.diagnosis.findings[0].code == "HD101"
    assert hd.explain(SEED_IDS, vocab) == stream
    ids = hd.parse_tokens(SEED_IDS, vocab)
    by_ids = hd.explain(list(ids.tokens), vocab)
    assert isinstance(by_ids, hd.ExplainedStream)
    assert by_ids.diagnosis.findings == stream.diagnosis.findings
    log = hd.explain(hd.read_input(SAMPLES / "vllm-traceback.log"))
    assert isinstance(log, hd.ExplainedLog)
    text = (SAMPLES / "vllm-traceback.log").read_text()
    assert [e.code for e in log.explanation.errors] == [e.code for e in hd.extract_failures(text)]
    with pytest.raises(hd.InputError, match="grammar"):
        hd.explain(ids, vocab, check_grammar=True)


def test_write_events_then_read_events_round_trips(tmp_path: Path) -> None:
    """write_events writes what `scan --events` writes, and read_events gives back the frames
    of the scan that wrote them, in every format."""
    from harmony_doctor import advanced
    from harmony_doctor.scan.own_outputs import export_at

    result = hd.scan([_fleet_logs(tmp_path / "logs")], hd.ScanOptions(origin="host"))
    events, tallies = advanced.frames(result)
    assert events.height == 4 and tallies.height > 0
    for name in ("events.parquet", "events.jsonl", "events.csv"):
        path = tmp_path / name
        beside = hd.write_events(result, path)
        assert beside == advanced.requests_path(path) and beside.is_file()
        assert export_at(path) is not None
        back_events, back_tallies = hd.read_events([path])
        assert back_events.equals(events), name
        assert back_tallies.sort(back_tallies.columns).equals(tallies.sort(tallies.columns)), name
        # and report reads them as scan's own files: the same table as the scan's
        summary = hd.report([path], ["code"])
        assert summary.unread == () and summary.summary.table.equals(hd.report(result).table)
    (tmp_path / "bad.csv").write_text("not,an,events,file\n1,2,3,4\n")
    with pytest.raises(hd.InputError, match="not an events file"):
        hd.read_events([tmp_path / "bad.csv"])


def test_write_events_of_one_file_scan(tmp_path: Path) -> None:
    from harmony_doctor import advanced

    one = advanced.scan_file(SAMPLES / "vllm-requests.log")
    hd.write_events(one, tmp_path / "one.jsonl")
    events, _ = hd.read_events([tmp_path / "one.jsonl"])
    assert events.equals(advanced.frames(one)[0]) and events.height == len(one.events)


def test_decode_repro_render_grammar_and_rules(tmp_path: Path, vocab: Vocab) -> None:
    harmony = (SAMPLES / "tool-call.harmony.txt").read_text()
    assert hd.decode(harmony, vocab) == hd.decode(hd.parse_tokens(harmony, vocab), vocab)
    assert hd.decode([200005, 17196, 200008], vocab) == "<|channel|>final<|message|>"
    small = hd.repro(hd.parse_tokens(SEED_IDS, vocab), tmp_path / "b", vocab, budget=2_000)
    assert {p.name for p in (tmp_path / "b").iterdir()} >= {"tokens.json", "repro.py"}
    assert len(small.minimal) < len(small.original)
    with pytest.raises(hd.DoctorError):
        hd.repro(list(small.original), tmp_path / "b", vocab, budget=10, copy_vocab=False)
    prompt = hd.render((SAMPLES / "seed-chat.json").read_text(), vocab)
    assert isinstance(prompt, hd.RenderedPrompt)
    assert "<|channel|>" in hd.grammar("gbnf")
    assert [r.code for r in hd.rules(" hd101 ")] == ["HD101"] and hd.rules("HD999") == ()
    assert hd.rules() == tuple(sorted(hd.rules(), key=lambda r: r.code))


def test_the_cli_names_only_the_top_level_and_advanced() -> None:
    """Every name the CLI takes from the package is a verb or record of the top level
    (`hd.NAME`, `from harmony_doctor import NAME`) or of harmony_doctor.advanced, by name:
    the forwarded names of the first releases are not for the CLI."""
    import ast

    from harmony_doctor import advanced

    wrong = []
    for path in sorted((REPO / "harmony_doctor" / "cli").glob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module in (
                "harmony_doctor",
                "harmony_doctor.advanced",
            ):
                public = hd.__all__ if node.module == "harmony_doctor" else advanced.__all__
                wrong += [
                    f"{path.name}: {a.name}"
                    for a in node.names
                    if a.name not in [*public, "advanced"]
                ]
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                space = {"hd": hd.__all__, "advanced": advanced.__all__}.get(node.value.id)
                if space is not None and node.attr not in space:
                    wrong.append(f"{path.name}: {node.value.id}.{node.attr}")
    assert wrong == []
