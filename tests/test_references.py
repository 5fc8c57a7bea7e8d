"""Comments and docstrings cite only files that exist in the repository."""

from __future__ import annotations

import re

from tests.helpers import REPO

# Folders of this repository: a path that starts with one of them is one of ours.
_OURS = (
    "harmony_doctor",
    "inputs",
    "logs",
    "scan",
    "output",
    "cli",
    "faults",
    "streams",
    "harmony",
    "native",
    "src",
    "tests",
    "benchmarks",
    "examples",
    "samples",
    "notes",
    "docs",
)
_PATH = re.compile(r"(?<![\w./-])((?:[\w-]+/)+[\w-]+\.(?:py|rs|md|toml|pyi|json))\b")
_ROOTS = ("", "harmony_doctor/", "native/", "native/src/")


def _sources() -> list[str]:
    folders = ("harmony_doctor", "native/src", "tests", "benchmarks", "examples")
    found = sorted(
        str(p.relative_to(REPO))
        for folder in folders
        for p in (REPO / folder).rglob("*")
        if p.suffix in (".py", ".rs", ".pyi") and "target" not in p.parts
    )
    return [*found, "Makefile", "pyproject.toml"]


def test_every_cited_path_of_ours_exists() -> None:
    missing = []
    for name in _sources():
        for number, line in enumerate((REPO / name).read_text().splitlines(), start=1):
            for match in _PATH.finditer(line):
                ref = match.group(1)
                if ref.split("/", 1)[0] not in _OURS:
                    continue  # another project's file (vLLM's entrypoints/..., openai_harmony/...)
                if not any((REPO / (root + ref)).exists() for root in _ROOTS):
                    missing.append(f"{name}:{number}: {ref}")
    assert not missing
