"""The public API (harmony_doctor/__init__.py) and the shape of the package behind it."""

from __future__ import annotations

import io
import re
import subprocess
import sys
from datetime import datetime
from pathlib import Path

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


def test_scan_stream_equals_scan_paths() -> None:
    path = SAMPLES / "vllm-requests.log"
    by_path = hd.scan_paths([path])
    mtime = datetime.fromtimestamp(path.stat().st_mtime)
    by_stream = hd.scan_stream(io.BytesIO(path.read_bytes()), str(path), reference=mtime)
    assert by_stream.events == by_path.events and by_path.events
    assert sorted(by_stream.requests) == sorted(by_path.requests)
    table = hd.summarize(by_path, ["code"])
    assert int(table["count"].sum()) == len(by_path.events)


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


def test_no_module_imports_back_into_itself() -> None:
    """No import cycle between modules: an import A -> B never has a way back B -> ... -> A."""
    import grimp

    graph = grimp.build_graph("harmony_doctor")
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
