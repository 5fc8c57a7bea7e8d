"""The docs are tested: every command example in README.md and docs/*.md runs, and its output
is the one shown.

A command example is a fenced block marked `console`: lines starting `$ ` are commands (a
line ending in `\\` goes on), the lines after each are what it prints (stdout, then stderr).
A line `...` in the shown output stands for any number of lines (as doctest's ELLIPSIS), and a
last line `[exit N]` says the command exits N (without it, 0 or 1: clean or findings). Each
page runs in a temporary folder of its own holding copies of `samples/` and `examples/`, its
blocks in order (a later command may read what an earlier one wrote), with the installed
`harmony-doctor` and `python` first on PATH and no network. Only what must vary is normalised:
the version and the scan core it reports, the folder the page ran in, and timings.

A block that cannot run offline (kubectl, a bucket, a cluster) is marked `console not-run`;
`NOT_RUN` counts those marks so that they cannot grow silently, and a shell block of any other
kind (```sh, ```bash) is refused: every command shown is either run or marked. ```python
blocks run too (`python not-run` for those that need a cluster), in the same folder; a block\nmarked ```output right after one is what it prints.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import harmony_doctor as hd
from tests.helpers import REPO

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
# Marked blocks that are shown but not run, per page (kubectl, object storage, Ray, Dask, a
# watcher that runs until stopped). Raising a number here is a reviewed decision.
NOT_RUN = {
    "README.md": 3,  # make demo/test, installing the wheel, a watcher on /var/log
    "docs/library.md": 1,  # Ray
    "docs/operators.md": 7,  # cron, lnav, logcli/journalctl/kubectl, a fleet, S3, Ray/Dask, Ray
    "docs/scan.md": 2,  # /var/log and journalctl; a fleet by host name
    "docs/watch.md": 2,  # a watcher on a host; kubectl apply
}
SHELL_FENCES = {"sh", "bash", "shell", "zsh", "console"}
FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
EXIT = re.compile(r"^\[exit (\d+)\]$")
# Samples' log stamps carry no year: they take their file's modification time, fixed here.
SAMPLES_MTIME = 1_796_126_400  # 2026-12-01 12:00 UTC


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    info: str
    body: str


@dataclass(frozen=True)
class Command:
    line: int
    command: str
    shown: tuple[str, ...]
    exit_code: int | None


def blocks(page: Path) -> list[Block]:
    text = page.read_text()
    name = str(page.relative_to(REPO))
    return [
        Block(name, text.count("\n", 0, m.start()) + 1, m.group(1).strip(), m.group(2))
        for m in FENCE.finditer(text)
    ]


def commands(block: Block) -> list[Command]:
    """The `$ ` commands of a console block, each with the lines shown after it."""
    found: list[Command] = []
    lines = block.body.splitlines()
    i = 0
    while i < len(lines):
        if not lines[i].startswith("$ "):
            raise AssertionError(f"{block.page}:{block.line + 1 + i}: output before a command")
        start = i
        command = lines[i][2:]
        while command.endswith("\\"):
            i += 1
            command = command[:-1] + "\n" + lines[i]
        i += 1
        shown: list[str] = []
        while i < len(lines) and not lines[i].startswith("$ "):
            shown.append(lines[i])
            i += 1
        code = None
        if shown and (m := EXIT.match(shown[-1])):
            code, shown = int(m.group(1)), shown[:-1]
        found.append(Command(block.line + 1 + start, command, tuple(shown), code))
    return found


def normalise(text: str, folder: Path) -> str:
    text = text.replace(str(folder) + "/", "").replace(str(folder), ".")
    text = text.replace(hd.__version__, "VERSION")
    text = re.sub(r"\(scan core: \w+\)", "(scan core: CORE)", text)  # native where cargo built it
    return re.sub(r"\b\d+(\.\d+)? ?(ms|s)\b(?= |\)|$)", "TIME", text, flags=re.MULTILINE)


def matches(shown: tuple[str, ...], got: list[str]) -> bool:
    """Shown lines equal to the output's, a `...` line standing for any number of lines."""
    if not shown:
        return not got
    if shown[0].strip() == "...":
        return any(matches(shown[1:], got[k:]) for k in range(len(got) + 1))
    return bool(got) and shown[0].rstrip() == got[0].rstrip() and matches(shown[1:], got[1:])


def _folder(tmp_path: Path) -> Path:
    for name in ("samples", "examples"):
        shutil.copytree(REPO / name, tmp_path / name)
    for path in (tmp_path / "samples").iterdir():
        os.utime(path, (SAMPLES_MTIME, SAMPLES_MTIME))
    return tmp_path


def _environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARMONY_DOCTOR_")}
    if "HARMONY_DOCTOR_CACHE" in os.environ:  # the suite's own cache (tests/conftest.py)
        env["HARMONY_DOCTOR_CACHE"] = os.environ["HARMONY_DOCTOR_CACHE"]
    env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', '/usr/bin:/bin')}"
    env["PYTHONPATH"] = str(REPO)  # the package of this checkout, whatever the folder
    env.update(NO_COLOR="1", TZ="UTC", COLUMNS="100")
    return env


def _run(args: list[str], folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, cwd=folder, env=_environment(), capture_output=True, text=True, timeout=600
    )


def _shell(command: str, folder: Path) -> subprocess.CompletedProcess[str]:
    return _run(["bash", "-o", "pipefail", "-c", command], folder)


def run_console(block: Block, folder: Path) -> list[str]:
    problems = []
    for command in commands(block):
        done = _shell(command.command, folder)
        got = normalise(done.stdout + done.stderr, folder).splitlines()
        shown = tuple(normalise(line, folder) for line in command.shown)
        codes = (command.exit_code,) if command.exit_code is not None else (0, 1)
        where = f"{block.page}:{command.line}: $ {command.command}"
        if done.returncode not in codes:
            problems.append(f"{where}\n  exit {done.returncode}\n" + "\n".join(got[-20:]))
        elif not matches(shown, got):
            problems.append(
                f"{where}\n  shown:\n" + "\n".join(shown) + "\n  got:\n" + "\n".join(got)
            )
    return problems


def run_python(block: Block, folder: Path, shown: Block | None = None) -> list[str]:
    """A python block runs in the page's folder; the ```output block right after it, if any,
    is what it prints."""
    done = _run([sys.executable, "-c", block.body], folder)
    if done.returncode != 0:
        return [f"{block.page}:{block.line}: python block failed\n{done.stderr[-2000:]}"]
    if shown is not None:
        got = normalise(done.stdout, folder).splitlines()
        lines = tuple(normalise(line, folder) for line in shown.body.splitlines())
        if not matches(lines, got):
            return [f"{block.page}:{block.line}: python block printed\n" + "\n".join(got)]
    return []


def _output_after(found: list[Block], i: int) -> Block | None:
    return found[i + 1] if i + 1 < len(found) and found[i + 1].info == "output" else None


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_example_on_the_page_runs_as_shown(page: Path, tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    problems: list[str] = []
    found = blocks(page)
    for i, block in enumerate(found):
        if block.info == "console":
            problems += run_console(block, folder)
        elif block.info == "python":
            problems += run_python(block, folder, _output_after(found, i))
    assert problems == []


def test_every_shell_block_is_run_or_marked_and_the_marks_are_counted() -> None:
    marked: dict[str, int] = {}
    unmarked = []
    for page in PAGES:
        for block in blocks(page):
            language, _, mark = block.info.partition(" ")
            if mark == "not-run" and language in ("console", "python"):
                marked[block.page] = marked.get(block.page, 0) + 1
            elif language in SHELL_FENCES - {"console"} or (language == "console" and mark):
                unmarked.append(f"{block.page}:{block.line}: ```{block.info}")
    assert unmarked == []
    assert marked == NOT_RUN


def test_pages_show_commands_that_are_run() -> None:
    """Each page that documents a command runs at least one example of it."""
    run = [
        c.command
        for page in PAGES
        for b in blocks(page)
        if b.info == "console"
        for c in commands(b)
    ]
    assert len(run) >= 30
    for verb in ("explain", "scan", "report", "decode", "recover", "repro", "render", "grammar"):
        assert any(c.startswith(f"harmony-doctor {verb}") for c in run), verb
    assert any(c.startswith("harmony-doctor rules") for c in run)


def test_make_demo_commands_are_in_the_readme_and_run() -> None:
    recipe = (REPO / "Makefile").read_text().split("\ndemo:", 1)[1].split("\n\n", 1)[0]
    demo = re.findall(r"^\t\$\(BIN\)/(harmony-doctor [^|\n]+?)\s*(?:\|\||$)", recipe, re.M)
    readme = [
        c.command for b in blocks(REPO / "README.md") if b.info == "console" for c in commands(b)
    ]
    assert demo and [c for c in demo if c not in readme] == []


def test_the_runner_catches_a_wrong_output(tmp_path: Path) -> None:
    """The runner itself: a wrong line, a missing line and a wrong exit code are each caught,
    and `...` stands for lines."""
    good = Block("t.md", 1, "console", "$ echo a; echo b; echo c\na\n...\nc\n")
    assert run_console(good, tmp_path) == []
    for body in (
        "$ echo a; echo b\na\nc\n",
        "$ echo a; echo b\na\n",
        "$ false\n[exit 2]\n",
        "$ exit 2\n",
    ):
        assert run_console(Block("t.md", 1, "console", body), tmp_path) != [], body


# --- the architecture page is true to the tree -------------------------------------------

ROW = re.compile(r"^\| `((?:harmony_doctor|native/src)/[\w/]*)` \| ([^|]*) \|", re.MULTILINE)


def _tree() -> set[str]:
    found = {
        str(p.relative_to(REPO).with_suffix(""))
        for p in (REPO / "harmony_doctor").rglob("*.py")
        if p.name != "__init__.py" and "__pycache__" not in p.parts
    }
    found |= {
        str(p.relative_to(REPO).parent) + "/"
        for p in (REPO / "harmony_doctor").rglob("__init__.py")
    }
    rust = {str(p.relative_to(REPO).with_suffix("")) for p in REPO.glob("native/src/*.rs")}
    return found | rust | {"native/src/"}


def _named() -> set[str]:
    text = (REPO / "docs" / "architecture.md").read_text()
    named: set[str] = set()
    for package, modules in ROW.findall(text):
        named.add(package)
        named |= {package + m for m in re.findall(r"`(\w+)`", modules)}
    return named


def test_architecture_names_every_module_and_only_those() -> None:
    """Every package and module of harmony_doctor/ and every Rust module is in the page's
    table, and nothing the table names is gone."""
    named, tree = _named(), _tree()
    assert sorted(tree - named) == [], "in the tree, missing from docs/architecture.md"
    assert sorted(named - tree) == [], "named in docs/architecture.md, gone from the tree"


def test_the_files_and_functions_the_docs_name_exist() -> None:
    """A file the docs name in backticks (a module, a Rust file, a test, an example) exists,
    and a function named as a file's ("`native.py`'s `name`") is defined in it."""
    named_path = re.compile(
        r"`((?:harmony_doctor|native|tests|benchmarks|examples)/[\w/.-]+\.(?:py|rs|yaml))`"
    )
    owned = re.compile(r"`([\w/]+\.(?:py|rs))`'s ((?:`\w+`(?:,| and|, and)? ?)+)")
    missing: list[str] = []
    for page in [*PAGES, REPO / "CONTRIBUTING.md"]:
        text = page.read_text()
        missing += [
            f"{page.name}: {p}" for p in named_path.findall(text) if not (REPO / p).exists()
        ]
        for path, names in owned.findall(text):
            source = (REPO / path).read_text() if (REPO / path).exists() else ""
            missing += [
                f"{page.name}: {path}'s {name}"
                for name in re.findall(r"`(\w+)`", names)
                if not re.search(rf"^\s*(?:def|class|fn|pub fn|async def) {name}\b", source, re.M)
            ]
    assert missing == []


def update(page: Path) -> None:
    """Write each command's real output under it (`python -m tests.test_docs PAGE...`), as
    `--update-golden` does for goldens: the diff is the review. A command whose shown output
    holds a `...` line is left as written (it is only checked), as are the not-run ones."""
    import tempfile

    text = page.read_text()
    with tempfile.TemporaryDirectory() as tmp:
        folder = _folder(Path(tmp))
        out: list[str] = []
        last = 0
        printed: str | None = None
        for m in FENCE.finditer(text):
            info, body = m.group(1).strip(), m.group(2)
            block = Block(str(page), text.count("\n", 0, m.start()) + 1, info, body)
            if info == "output" and printed is not None:
                out += [text[last : m.start(2)], printed]
                last = m.end(2)
            printed = None
            if info == "python":
                printed = _run([sys.executable, "-c", body], folder).stdout.replace(
                    str(folder) + "/", ""
                )
            if info != "console":
                continue
            lines: list[str] = []
            for command in commands(block):
                lines += [f"$ {command.command}".replace("\n", "\\\n")]
                done = _shell(command.command, folder)
                if any(line.strip() == "..." for line in command.shown):
                    lines += command.shown
                else:
                    got = done.stdout + done.stderr
                    got = got.replace(str(folder) + "/", "").replace(str(folder), ".")
                    lines += [line.rstrip() for line in got.splitlines()]
                if done.returncode not in (0, 1):
                    lines.append(f"[exit {done.returncode}]")
            out += [text[last : m.start(2)], "\n".join(lines) + "\n"]
            last = m.end(2)
        page.write_text("".join(out) + text[last:])


if __name__ == "__main__":
    for name in sys.argv[1:]:
        update(Path(name).resolve())
