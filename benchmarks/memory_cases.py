"""Peak memory of scan, report and explain on each memory case of issue 34.

    python benchmarks/memory_cases.py [--dir DIR] [--only NAME,NAME] [--json]

Each case's input is generated once in DIR (kept: reruns reuse it), then the command runs in
a fresh process under `/usr/bin/time -f %M` (the process's own peak RSS). The cases are the
ones the issue measured on the main it was filed against (its "before"):

| case | command |
|---|---|
| `blank` | 16 MiB of newlines: scan and explain |
| `blank_gz` | 1 GiB of newlines, gzipped (1 MB): scan |
| `header` | ten failing header lines of 1 MiB of remainder words: scan and explain |
| `events` | an events CSV of 500,000 rows: report |
| `cell` | an events CSV whose one message cell is 150 MB: report |
| `log100` | a 100 MB vLLM log: explain (refused past 32 MiB, exit 2) |
| `small` | 20,000 small files, a third failing: scan |
| `id_lines` | 200,000 one-line id lists (10 MB): scan |
| `jsonl` | a 4 MB JSON-lines file of 54,000 id lists: scan |
| `distinct` | 200,000 distinct failures (`memory.py`'s log): scan |

A benchmark, not a test: tests/peak.py and the tests that use it hold the bound.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import os
import random
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from memory import write_log  # benchmarks/ is not a package

_ERROR = (
    "(APIServer pid=7) ERROR 11-28 10:00:{:02d} [serving_chat.py:1145] "
    "openai_harmony.HarmonyError: "
)
_MIB = 1 << 20


def _blank(path: Path) -> Path:
    path.write_bytes(b"\n" * (16 * _MIB))
    return path


def _blank_gz(path: Path) -> Path:
    with gzip.open(path, "wb", compresslevel=9) as out:
        for _ in range(64):
            out.write(b"\n" * (16 * _MIB))
    return path


def _header(path: Path) -> Path:
    words = "word " * (_MIB // 5)
    line = (
        _ERROR.format(1) + f'unexpected tokens remaining in message header: Some("to=f {words}")\n'
    )
    path.write_text(line * 10)
    return path


def _sample_events(folder: Path) -> tuple[list[str], list[str]]:
    """The header and one row of an events CSV as this scan writes it."""
    log = folder / "one.log"
    log.write_text(
        _ERROR.format(1) + "Unexpected token 200002 while expecting start token 200006\n"
    )
    events = folder / "one-events.csv"
    events.unlink(missing_ok=True)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "harmony_doctor",
            "scan",
            str(log),
            "--events",
            str(events),
            "--format",
            "json",
        ],
        capture_output=True,
        check=False,
    )
    with events.open(newline="") as f:
        header, row = list(csv.reader(f))[:2]
    return header, row


def _events(path: Path) -> Path:
    header, row = _sample_events(path.parent)
    line = header.index("line")
    with path.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(header)
        for n in range(500_000):
            row[line] = str(n + 1)
            out.writerow(row)
    return path


def _cell(path: Path) -> Path:
    header, row = _sample_events(path.parent)
    row[header.index("message")] = "x" * (150 * 1000 * 1000)
    with path.open("w", newline="") as f:
        csv.writer(f).writerows([header, row])
    return path


def _log100(path: Path) -> Path:
    make = Path(__file__).parent / "make_logs.py"
    folder = path.parent / "log100"
    subprocess.run(
        [sys.executable, str(make), "--mb", "100", "--received", "vllm", str(folder)], check=True
    )
    (folder / "vllm.log").rename(path)
    return path


def _small(path: Path) -> Path:
    path.mkdir()
    for n in range(20_000):
        stamp = f"11-28 10:00:{n % 60:02d}"
        text = f"(APIServer pid=7) INFO {stamp} [logger.py:71] Received request r{n}\n"
        if n % 3 == 0:
            text += _ERROR.format(n % 60) + "Unknown role: assistantassistant\n"
        (path / f"{n:05d}.log").write_text(text)
    return path


def _id_lines(path: Path) -> Path:
    rng = random.Random(1)
    with path.open("w") as f:
        for _ in range(200_000):
            f.write(" ".join(str(rng.randrange(1000, 150_000)) for _ in range(6)) + "\n")
    return path


def _jsonl(path: Path) -> Path:
    rng = random.Random(1)
    with path.open("w") as f:
        for _ in range(54_000):
            f.write("[" + ", ".join(str(rng.randrange(1000, 150_000)) for _ in range(10)) + "]\n")
    return path


def _distinct(path: Path) -> Path:
    return write_log(path, 200_000)


# name -> (file name, maker, commands run on it)
CASES: dict[str, tuple[str, Callable[[Path], Path], tuple[str, ...]]] = {
    "blank": ("blank.log", _blank, ("scan", "explain")),
    "blank_gz": ("blank.log.gz", _blank_gz, ("scan",)),
    "header": ("header.log", _header, ("scan", "explain")),
    "events": ("events.csv", _events, ("report",)),
    "cell": ("cell.csv", _cell, ("report",)),
    "log100": ("log100.log", _log100, ("explain",)),
    "small": ("small", _small, ("scan",)),
    "id_lines": ("id_lines.txt", _id_lines, ("scan",)),
    "jsonl": ("ids.jsonl", _jsonl, ("scan",)),
    "distinct": ("distinct.log.gz", _distinct, ("scan",)),
}


def measure(command: str, path: Path) -> dict[str, object]:
    """Peak RSS (MiB), wall seconds and exit code of one command on `path`, fresh process."""
    args = [command, str(path), "--format", "json"] + (["-j", "1"] if command == "scan" else [])
    with tempfile.NamedTemporaryFile("r") as record:
        run = subprocess.run(
            [
                "/usr/bin/time",
                "-o",
                record.name,
                "-f",
                "%M %e",
                sys.executable,
                "-m",
                "harmony_doctor",
                *args,
            ],
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, "NO_COLOR": "1"},
        )
        peak, wall = record.read().split()[-2:]
    return {"peak_mib": int(peak) // 1024, "wall_s": float(wall), "exit": run.returncode}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "hd-memory-cases")
    parser.add_argument("--only", help="comma-separated case names (default: all)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    names = args.only.split(",") if args.only else list(CASES)
    rows = []
    for name in names:
        file_name, make, commands = CASES[name]
        path = args.dir / file_name
        if not path.exists():
            make(path)
        for command in commands:
            row = {"case": name, "command": command, **measure(command, path)}
            rows.append(row)
            if not args.json:
                peak, wall, code = row["peak_mib"], row["wall_s"], row["exit"]
                print(f"{name:10} {command:8} {peak:6} MiB  {wall:7.1f} s  exit {code}")
    if args.json:
        print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
