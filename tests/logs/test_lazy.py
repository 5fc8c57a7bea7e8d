"""lazy.py: the log reader's patterns compile at their first use, and then are the compiled
pattern's own methods; importing the reader, or scanning a log without failures, compiles none."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from harmony_doctor.lazy_regex import Pattern
from harmony_doctor.native import use_native

_MODULES = ("describe", "extract", "lines", "messages", "process", "servers", "stripped")


@pytest.mark.parametrize(
    ("pattern", "flags", "text"),
    [
        (r"(?P<a>b+)(c)?", 0, "xx bbc bb"),
        (r"harmony\w*", re.I, "HarmonyError, harmony"),
        (r"^\s*(\d+)", 0, "  12 then 34"),
    ],
)
def test_a_pattern_does_what_its_compiled_form_does(pattern: str, flags: int, text: str) -> None:
    lazy, regex = Pattern(pattern, flags), re.compile(pattern, flags)
    assert "match" not in vars(lazy)  # nothing compiled yet
    for pos in (0, 1, 3):
        assert _same(lazy.search(text, pos), regex.search(text, pos))
        assert _same(lazy.match(text, pos), regex.match(text, pos))
        assert _same(lazy.fullmatch(text, pos), regex.fullmatch(text, pos))
    assert [m.span() for m in lazy.finditer(text)] == [m.span() for m in regex.finditer(text)]
    assert lazy.findall(text) == regex.findall(text)
    assert lazy.sub("-", text, 1) == regex.sub("-", text, 1)
    assert lazy.split(text) == regex.split(text)
    assert (lazy.groups, dict(lazy.groupindex)) == (regex.groups, dict(regex.groupindex))
    # Compiled once, then the compiled pattern's own bound methods answer.
    assert vars(lazy)["search"].__self__ is lazy.compiled()
    assert lazy.compiled() == regex


def _same(a: re.Match[str] | None, b: re.Match[str] | None) -> bool:
    if a is None or b is None:
        return a is b
    return (a.span(), a.groups(), a.lastindex) == (b.span(), b.groups(), b.lastindex)


def _compiled_after(code: str) -> list[str]:
    """The log reader's patterns compiled in a fresh process after running `code`."""
    probe = (
        "import sys\n"
        f"{code}\n"
        "from harmony_doctor.lazy_regex import Pattern\n"
        "def walk(value):\n"
        "    if isinstance(value, Pattern):\n"
        "        yield value\n"
        "    elif isinstance(value, (tuple, list)):\n"
        "        for item in value:\n"
        "            yield from walk(item)\n"
        "found, compiled = 0, []\n"
        f"for name in {_MODULES!r}:\n"
        "    module = sys.modules.get('harmony_doctor.logs.' + name)\n"
        "    for key, value in vars(module).items() if module else ():\n"
        "        for pattern in walk(value):\n"
        "            found += 1\n"
        "            if 'match' in vars(pattern):\n"
        "                compiled.append(name + '.' + key)\n"
        "print(found, sorted(set(compiled)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    found, _, compiled = out.strip().splitlines()[-1].partition(" ")
    assert int(found) > 0  # the probe saw the patterns it checks
    import ast

    return list(ast.literal_eval(compiled))


def test_importing_the_reader_compiles_no_pattern() -> None:
    code = "\n".join(f"import harmony_doctor.logs.{name}" for name in _MODULES)
    assert _compiled_after(code) == []


def test_a_scan_without_failures_compiles_no_pattern_of_the_reader(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("(APIServer pid=4121) INFO:     Started server process [4121]\n")
    code = (
        "from harmony_doctor.cli import app\n"
        f"try:\n    app.main(['scan', {str(log)!r}])\nexcept SystemExit:\n    pass\n"
        "import harmony_doctor.logs.extract\n"
    )
    assert _compiled_after(code) == []


def test_reading_a_traceback_compiles_only_what_it_uses() -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/x/openai_harmony/__init__.py", line 637, in process\n'
        "openai_harmony.HarmonyError: Unknown role: assistantassistant\n"
    )
    code = (
        "from harmony_doctor.logs import extract_text\n"
        f"assert len(extract_text({text!r})) == 1\n"
        + "\n".join(f"import harmony_doctor.logs.{name}" for name in _MODULES)
    )
    compiled = _compiled_after(code)
    # the prefixes' one regex, unless Rust reads these lines (it is made of the pattern's text)
    assert ("lines._ANY_PREFIX_READ" in compiled) == (not use_native())
    # the references the fast paths are tested against, and forms the text holds no word of
    assert "lines._ANY_PREFIX" not in compiled and "messages.ANY_FORM" not in compiled
