"""`harmony-doctor scan` on every log shape it reads, against ripgrep, per GiB of log.

    python benchmarks/shapes.py [--mb 128] [--every 500] [--repeat 3] [--dir DIR] [--json]
                                [--core-threads 1|2]

One generated vLLM log (benchmarks/make_logs.py, `--every` requests per failure) as each
wrapper stores it: plain, Docker's json-file driver (compact JSON), CRI (`F` lines),
journald (`journalctl -o short-iso` and `-o json`) and Vector/Promtail JSON; and logs in
SGLang's and llama.cpp's own line shapes with the same failure rate. Per shape: the CPU time
(user + sys, best of N) of `harmony-doctor scan --jobs 1 --format json` less that of a scan of
an empty file measured in the same run (the fixed start), per GiB of the shape's bytes; the
same for `rg -c HarmonyError`; their ratio; and the failures and requests scan counted against
the generator's truth (a difference prints MISMATCH); and how many wrapped lines scan read one
by one in Python (`python_lines` in its JSON): a shape where that is more than 0.1% of its lines
prints FALLBACK and fails the run (exit 1).

`--core-threads`: the Rust core's threads (HARMONY_DOCTOR_CORE_THREADS; default: its own
choice), to compare the CPU a chunk split over two threads costs.

A benchmark, not a test: times depend on the machine and its load (noted).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import resource
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from make_logs import fails, write

GIB = 1024**3
FALLBACK = 0.001  # a shape with more of its lines unwrapped in Python fails the benchmark
STAMP = dt.datetime(2026, 11, 1)


def _times(n: int) -> tuple[str, int]:
    """The RFC 3339 time of wrapped line n (a line every 10 ms) and journald's µs."""
    t = STAMP + dt.timedelta(milliseconds=10 * n)
    micros = int((t - dt.datetime(1970, 1, 1)).total_seconds() * 1_000_000)
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ"), micros


def _docker(n: int, line: str) -> str:
    time, _ = _times(n)
    record = {"log": line + "\n", "stream": "stderr", "time": time}
    return json.dumps(record, separators=(",", ":"))


def _cri(n: int, line: str) -> str:
    return f"{_times(n)[0]} stderr F {line}"


def _journal_short(n: int, line: str) -> str:
    return f"{_times(n)[0][:19]}+0000 gpu-1 vllm[4242]: {line}"


def _journal_json(n: int, line: str) -> str:
    record = {"__REALTIME_TIMESTAMP": str(_times(n)[1]), "_PID": "4242", "MESSAGE": line}
    return json.dumps(record)


def _vector(n: int, line: str) -> str:
    record = {"host": "gpu-1", "message": line, "source_type": "file", "timestamp": _times(n)[0]}
    return json.dumps(record)


WRAPPERS: dict[str, Callable[[int, str], str] | None] = {
    "plain": None,
    "docker": _docker,
    "cri": _cri,
    "journald-short": _journal_short,
    "journald-json": _journal_json,
    "vector": _vector,
}


def _wrap(plain: Path, target: Path, wrap: Callable[[int, str], str]) -> None:
    with plain.open(encoding="utf-8") as src, target.open("w", encoding="utf-8") as out:
        out.writelines(wrap(n, line.rstrip("\n")) + "\n" for n, line in enumerate(src))


def _engine_lines(engine: str, n: int, every: int) -> Iterator[str]:
    """Request n in SGLang's or llama.cpp's own log lines; a failure as each logs one."""
    stamp = (STAMP + dt.timedelta(seconds=n // 4)).strftime("%Y-%m-%d %H:%M:%S")
    if engine == "sglang":
        yield f"[{stamp}] Prefill batch. #new-seq: 1, #new-token: 1024, #cached-token: 0, token usage: 0.01, #running-req: 3, #queue-req: 0"
        yield f"[{stamp}] Decode batch. #running-req: 4, #token: 8192, token usage: 0.05, cuda graph: True, gen throughput (token/s): 412.33, #queue-req: 0"
        yield f'[{stamp}] INFO:     127.0.0.1:{40000 + n % 20000} - "POST /v1/chat/completions HTTP/1.1" 200 OK'
        if fails(n, every):
            yield f"[{stamp}] ERROR:    Exception in ASGI application"
            yield "Traceback (most recent call last):"
            yield '  File "/sgl-workspace/sglang/python/sglang/srt/entrypoints/openai/serving_chat.py", line 512, in _process_messages'
            yield 'openai_harmony.HarmonyError: unexpected tokens remaining in message header: Some("to=functions.get_weather")'
        return
    yield f"slot launch_slot_: id  0 | task {n} | processing task"
    yield f"slot update_slots: id  0 | task {n} | new prompt, n_ctx_slot = 131072, n_keep = 0, n_prompt_tokens = 812"
    yield "prompt eval time =      48.12 ms /   812 tokens (    0.06 ms per token, 16874.28 tokens per second)"
    yield "       eval time =     913.55 ms /   120 tokens (    7.61 ms per token,   131.35 tokens per second)"
    if fails(n, every):
        yield 'srv    operator(): got exception: {"code":500,"message":"Failed to parse input at pos 37: <|start|>assistant<|channel|>final <|constrain|>json<|message|>","type":"server_error"}'
    # llama-server's line per HTTP request (`done request:` in later builds), one per request;
    # a poll of /slots is no request the rate counts
    verb = "done request" if n % 2 else "request"
    yield f"srv  log_server_r: {verb}: POST /v1/chat/completions 127.0.0.1 {500 if fails(n, every) else 200}"
    if n % 8 == 0:
        yield "srv  log_server_r: done request: GET /slots 127.0.0.1 200"


def _engine_log(engine: str, target: Path, size: int, every: int) -> dict[str, int]:
    written = n = failures = 0
    with target.open("w", encoding="utf-8") as out:
        while written < size:
            text = "".join(f"{line}\n" for line in _engine_lines(engine, n, every))
            out.write(text)
            written += len(text)
            failures += fails(n, every)
            n += 1
    return {"requests": n, "failures": failures}


def _cpu(command: list[str], repeat: int, env: dict[str, str] | None = None) -> tuple[float, bytes]:
    """The best CPU time (user + sys of the child) of `repeat` runs, and the last output."""
    best, out = float("inf"), b""
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        done = subprocess.run(command, capture_output=True, check=False, env=env)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        used = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        best, out = min(best, used), done.stdout
    return best, out


def _doctor() -> list[str]:
    here = Path(sys.executable).parent / "harmony-doctor"
    return [str(here)] if here.exists() else [sys.executable, "-m", "harmony_doctor"]


def measure(args: argparse.Namespace) -> list[dict[str, Any]]:
    folder = Path(args.dir)
    folder.mkdir(parents=True, exist_ok=True)
    truth = write(folder / "base", args.mb, args.every)
    plain = folder / "base" / "vllm.log"
    logs: dict[str, tuple[Path, dict[str, int]]] = {}
    for name, wrap in WRAPPERS.items():
        target = plain if wrap is None else folder / f"{name}.log"
        if wrap is not None and not target.exists():
            _wrap(plain, target, wrap)
        logs[name] = (target, {"requests": truth["requests"], "failures": truth["failures"]})
    for engine in ("sglang", "llama.cpp"):
        target = folder / f"{engine}.log"
        logs[engine] = (target, _engine_log(engine, target, args.mb * 1024 * 1024, args.every))
    empty = folder / "empty.log"
    empty.write_bytes(b"")
    scan = [*_doctor(), "scan", "--jobs", "1", "--format", "json", "--exit-zero"]
    env = dict(os.environ)
    if args.core_threads:
        env["HARMONY_DOCTOR_CORE_THREADS"] = str(args.core_threads)
    start, _ = _cpu([*scan, str(empty)], args.repeat, env)
    rows = []
    for name, (path, expected) in logs.items():
        size = path.stat().st_size
        cpu, out = _cpu([*scan, str(path)], args.repeat, env)
        rg, _ = _cpu(["rg", "-c", "HarmonyError", str(path)], args.repeat)
        found = json.loads(out)
        totals = found["totals"]
        counted = {"requests": totals.get("requests") or 0, "failures": totals["failures"]}
        in_python = sum(f.get("python_lines", 0) for f in found["files"])
        per_gib = (cpu - start) * GIB / size
        rg_gib = rg * GIB / size
        rows.append(
            {
                "shape": name,
                "bytes": size,
                "scan_s_per_gib": round(per_gib, 2),
                "rg_s_per_gib": round(rg_gib, 3),
                "ratio": round(per_gib / rg_gib, 1) if rg_gib else None,
                "counted": counted,
                "truth": expected,
                "exact": counted == expected,
                "python_lines": in_python,
                "lines": totals["lines"],
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--mb", type=int, default=128, help="MiB of the base vLLM log")
    parser.add_argument("--every", type=int, default=500, help="requests per failure")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "hd-shapes"))
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--core-threads",
        type=int,
        choices=(1, 2),
        help="the Rust core's threads (default: its own)",
    )
    args = parser.parse_args()
    load = os.getloadavg()[0]
    rows = measure(args)
    if args.json:
        print(json.dumps({"load": load, "rows": rows}, indent=1))
        return
    print(f"load {load:.1f}; CPU per GiB, the fixed start taken off; best of {args.repeat}")
    print(
        f"{'shape':16} {'MiB':>6} {'scan s/GiB':>11} {'rg s/GiB':>9} {'ratio':>6} "
        f"{'lines in Python':>16}  counts"
    )
    for r in rows:
        check = "exact" if r["exact"] else f"MISMATCH {r['counted']} != truth {r['truth']}"
        if r["python_lines"] > FALLBACK * r["lines"]:
            check += f"  FALLBACK: {r['python_lines']:,} of {r['lines']:,} lines read in Python"
        print(
            f"{r['shape']:16} {r['bytes'] / 2**20:6.0f} {r['scan_s_per_gib']:11.2f} "
            f"{r['rg_s_per_gib']:9.3f} {r['ratio'] or 0:6.0f}x {r['python_lines']:16,}  {check}"
        )
    if any(r["python_lines"] > FALLBACK * r["lines"] for r in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
