"""Synthetic vLLM server logs for the scan benchmark, with their ground truth beside them.

    python benchmarks/make_logs.py OUT_DIR [--mb 1024] [--every 500] [--outputs N]
                                           [--received short|vllm] [--gzip] [--zstd]

Per simulated request (four API server processes, pid 1000..1003, four requests a second from
2026-11-01 00:00:00): a `Received request` line, a throughput line and an access line; every
50th request logs its output token ids (`--enable-log-outputs`; with `--outputs N` every
request logs a completion of about N ids); one request in every `--every` fails with a prefixed
traceback (the failing request moves through the pids; the four messages rotate). Streams to
disk, so 4 GiB needs no memory; deterministic for a given size. `--received vllm` writes the
`Received request` line the way vLLM's request logger does for gpt-oss chat requests (`prompt:
None, params: SamplingParams(...) in full, prompt_token_ids: [the rendered prompt's ids],
prompt_embeds shape: None, lora_request: None.`); `short` (the default) leaves those fields out.

Writes OUT_DIR/vllm.log (+ .gz with `gzip -1`, + .zst with `zstd -1`) and OUT_DIR/vllm.truth.json:
requests, failures by message and by the code scan should give, requests and failures per
(pid, "MM-DD HH").
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import json
import shutil
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

# (message, the code harmony-doctor gives it)
MESSAGES = (
    ("Unexpected token 200002 while expecting start token 200006", "HD111"),
    (
        'unexpected tokens remaining in message header: Some("I cannot help with that request")',
        "HD101",
    ),
    ("Unexpected token 12606 while expecting start token 200006", "HD112"),
    ("Unknown role: assistantassistant", "HD121"),
)
IDS = "[200005, 35644, 200008, 1844, 31064, 11122, 13, 200007, 200006, 173781, 200005, 17196, 200008, 525, 200002]"
# vLLM's SamplingParams repr for a chat request, as its request logger prints it
SAMPLING = (
    "SamplingParams(n=1, presence_penalty=0.0, frequency_penalty=0.0, repetition_penalty=1.0, "
    "temperature=1.0, top_p=1.0, top_k=0, min_p=0.0, seed=None, stop=[], stop_token_ids=[], "
    "bad_words=[], include_stop_str_in_output=False, ignore_eos=False, max_tokens=130895, "
    "min_tokens=0, logprobs=None, prompt_logprobs=None, skip_special_tokens=True, "
    "spaces_between_special_tokens=True, truncate_prompt_tokens=None, guided_decoding=None, "
    "extra_args=None)"
)
START = dt.datetime(2026, 11, 1)
PER_SECOND = 4
BLOCK = 4096  # requests per write


def fails(n: int, every: int) -> bool:
    """One failure per `every` requests, at an offset that walks through the four pids."""
    return n % every == 7 + (n // every) % 4


def completion_ids(n: int, size: int) -> str:
    """A well-formed completion of about `size` ids (analysis, then final), its content ids
    spread over the ordinary vocabulary and different for every request."""
    half = max(1, (size - 10) // 2)
    body = [(n * 7919 + i * 104_729) % 199_000 + 500 for i in range(2 * half)]
    ids = [200005, 35644, 200008, *body[:half], 200007, 200006, 173781, 200005, 17196, 200008]
    return "[" + ", ".join(map(str, [*ids, *body[half:], 200002])) + "]"


def prompt_ids(n: int) -> str:
    """A rendered gpt-oss chat prompt's ids (system, developer and user messages, then the open
    assistant header), about 120 ids, different for every request."""
    words = [(n * 31 + i * 7_919) % 199_000 + 500 for i in range(100)]
    ids = [200006, 17360, 200008, *words[:60], 200007, 200006, 1428, 200008, *words[60:]]
    return "[" + ", ".join(map(str, [*ids, 200007, 200006, 173781])) + "]"


def received_line(n: int, received: str) -> str:
    """The `Received request` line's text after its stamp and logger, in the chosen shape."""
    if received == "vllm":
        return (
            f"Received request chatcmpl-{n:08x}: prompt: None, params: {SAMPLING}, "
            f"prompt_token_ids: {prompt_ids(n)}, prompt_embeds shape: None, lora_request: None."
        )
    return (
        f"Received request chatcmpl-{n:08x}: params: SamplingParams(n=1, temperature=1.0, "
        "top_p=1.0, max_tokens=2048), lora_request: None."
    )


def request_lines(
    n: int, every: int, outputs: int = 0, received: str = "short"
) -> tuple[list[str], str, int]:
    """The lines of request n, its "MM-DD HH" hour and its pid; `outputs`: every request logs
    its completion with about that many ids (0: every 50th logs the short one); `received`: the
    shape of its `Received request` line (see the module's doc)."""
    pid = 1000 + n % 4
    p = f"(APIServer pid={pid}) "
    t = START + dt.timedelta(seconds=n // PER_SECOND)
    stamp = t.strftime("%m-%d %H:%M:%S")
    lines = [
        p + f"INFO {stamp} [logger.py:43] " + received_line(n, received),
        p
        + f"INFO {stamp} [loggers.py:123] Engine 000: Avg prompt throughput: 2119.3 tokens/s, Avg generation throughput: 25.5 tokens/s, Running: 16 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.1%, Prefix cache hit rate: 73.8%",
        p
        + f'INFO:     10.0.{n % 256}.{n % 7}:{30000 + n % 20000} - "POST /v1/chat/completions HTTP/1.1" 200 OK',
    ]
    if outputs or n % 50 == 0:
        ids = completion_ids(n, outputs) if outputs else IDS
        lines.append(
            p
            + f"INFO {stamp} [logger.py:71] Generated response chatcmpl-{n:08x}: output: 'analysisUser asks weather.assistantfinalok', output_token_ids: {ids}, finish_reason: stop"
        )
    if fails(n, every):
        prefix = p + f"ERROR {stamp} [serving_chat.py:1145] "
        message = MESSAGES[(n // every) % len(MESSAGES)][0]
        lines += [
            prefix + "Error in chat completion stream generator.",
            prefix + "Traceback (most recent call last):",
            prefix
            + '  File "/usr/local/lib/python3.12/dist-packages/vllm/entrypoints/openai/serving_chat.py", line 681, in chat_completion_stream_generator',
            prefix + "    harmony_parser.process(token_id)",
            prefix
            + '  File "/usr/local/lib/python3.12/dist-packages/openai_harmony/__init__.py", line 637, in process',
            prefix + "    self._inner.process(token)",
            prefix + f"openai_harmony.HarmonyError: {message}",
        ]
    return lines, stamp[:8], pid


def write(
    out: Path, megabytes: int, every: int = 500, outputs: int = 0, received: str = "short"
) -> dict[str, Any]:
    """Write OUT/vllm.log of about `megabytes` MiB and OUT/vllm.truth.json; the truth."""
    out.mkdir(parents=True, exist_ok=True)
    target = megabytes * 1024 * 1024
    written = lines_out = n = 0
    by_message: Counter[str] = Counter()
    by_code: Counter[str] = Counter()
    by_pid_hour: Counter[str] = Counter()
    failures_by_pid_hour: Counter[str] = Counter()
    with (out / "vllm.log").open("w", encoding="utf-8", newline="\n") as handle:
        while written < target:
            block: list[str] = []
            for _ in range(BLOCK):
                lines, hour, pid = request_lines(n, every, outputs, received)
                block += lines
                by_pid_hour[f"{pid} {hour}"] += 1
                if fails(n, every):
                    message, code = MESSAGES[(n // every) % len(MESSAGES)]
                    by_message[message] += 1
                    by_code[code] += 1
                    failures_by_pid_hour[f"{pid} {hour}"] += 1
                n += 1
            text = "\n".join(block) + "\n"
            handle.write(text)
            written += len(text)  # ASCII: characters are bytes
            lines_out += len(block)
    truth = {
        "every": every,
        "received": received,
        "bytes": written,
        "lines": lines_out,
        "requests": n,
        "failures": sum(by_code.values()),
        "failures_by_code": dict(sorted(by_code.items())),
        "failures_by_message": dict(sorted(by_message.items())),
        "requests_by_pid_hour": dict(sorted(by_pid_hour.items())),
        "failures_by_pid_hour": dict(sorted(failures_by_pid_hour.items())),
    }
    (out / "vllm.truth.json").write_text(json.dumps(truth, indent=1) + "\n")
    return truth


def compress(log: Path, kind: str) -> Path:
    """log.gz (`gzip -1`) or log.zst (`zstd -1`), with the command line tool when there is one."""
    if kind == "gzip":
        target = log.with_name(log.name + ".gz")
        if shutil.which("gzip"):
            with target.open("wb") as handle:
                subprocess.run(["gzip", "-1", "-c", str(log)], stdout=handle, check=True)
        else:
            with log.open("rb") as src, gzip.open(target, "wb", compresslevel=1) as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
        return target
    target = log.with_name(log.name + ".zst")
    if shutil.which("zstd"):
        subprocess.run(["zstd", "-q", "-f", "-1", "-T0", str(log), "-o", str(target)], check=True)
    else:
        import zstandard

        with log.open("rb") as src, target.open("wb") as dst:
            zstandard.ZstdCompressor(level=1).copy_stream(src, dst)
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--mb", type=int, default=1024)
    parser.add_argument("--every", type=int, default=500, help="requests per failure")
    parser.add_argument(
        "--outputs", type=int, default=0, help="every request logs a completion of this many ids"
    )
    parser.add_argument(
        "--received", choices=("short", "vllm"), default="short", help="Received request shape"
    )
    parser.add_argument("--gzip", action="store_true")
    parser.add_argument("--zstd", action="store_true")
    args = parser.parse_args()
    truth = write(args.out, args.mb, args.every, args.outputs, args.received)
    for kind in ("gzip", "zstd"):
        if getattr(args, kind):
            compress(args.out / "vllm.log", kind)
    print(f"{truth['requests']} requests, {truth['failures']} logged failures")


if __name__ == "__main__":
    main()
