"""Synthetic vLLM server logs for the scan benchmark: realistic line mix, known failure count.

    python benchmarks/make_logs.py OUT_DIR --mb 200 [--gzip]

Per simulated request: an access line, a `Received request` line, throughput lines, and one in
every 400 requests fails with a prefixed traceback (kinds rotate). Every 50th request logs its
output token ids (`--enable-log-outputs`). Deterministic for a given size.
"""

from __future__ import annotations

import argparse
import gzip
from pathlib import Path

MESSAGES = (
    "Unexpected token 200002 while expecting start token 200006",
    'unexpected tokens remaining in message header: Some("I cannot help with that request")',
    "Unexpected token 12606 while expecting start token 200006",
    "Unknown role: assistantassistant",
)
IDS = "[200005, 35644, 200008, 1844, 31064, 11122, 13, 200007, 200006, 173781, 200005, 17196, 200008, 525, 200002]"


def request_lines(n: int) -> list[str]:
    pid = 1000 + n % 4
    p = f"(APIServer pid={pid}) "
    stamp = f"11-{20 + (n // 200000) % 8:02d} {10 + (n // 3600) % 12:02d}:{(n // 60) % 60:02d}:{n % 60:02d}"
    lines = [
        p
        + f"INFO {stamp} [logger.py:43] Received request chatcmpl-{n:08x}: params: SamplingParams(n=1, temperature=1.0, top_p=1.0, max_tokens=2048), lora_request: None.",
        p
        + f"INFO {stamp} [loggers.py:123] Engine 000: Avg prompt throughput: 2119.3 tokens/s, Avg generation throughput: 25.5 tokens/s, Running: 16 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.1%, Prefix cache hit rate: 73.8%",
        p
        + f'INFO:     10.0.{n % 256}.{n % 7}:{30000 + n % 20000} - "POST /v1/chat/completions HTTP/1.1" 200 OK',
    ]
    if n % 50 == 0:
        lines.append(
            p
            + f"INFO {stamp} [logger.py:71] Generated response chatcmpl-{n:08x}: output: 'analysisUser asks weather.assistantfinalok', output_token_ids: {IDS}, finish_reason: stop"
        )
    if n % 400 == 7:
        prefix = p + f"ERROR {stamp} [serving_chat.py:1145] "
        lines += [
            prefix + "Error in chat completion stream generator.",
            prefix + "Traceback (most recent call last):",
            prefix
            + '  File "/usr/local/lib/python3.12/dist-packages/vllm/entrypoints/openai/serving_chat.py", line 681, in chat_completion_stream_generator',
            prefix + "    harmony_parser.process(token_id)",
            prefix
            + '  File "/usr/local/lib/python3.12/dist-packages/openai_harmony/__init__.py", line 637, in process',
            prefix + "    self._inner.process(token)",
            prefix + f"openai_harmony.HarmonyError: {MESSAGES[(n // 400) % len(MESSAGES)]}",
        ]
    return lines


def write(out: Path, megabytes: int, compress: bool) -> tuple[int, int]:
    out.mkdir(parents=True, exist_ok=True)
    target = megabytes * 1024 * 1024
    written = failures = n = 0
    chunks: list[str] = []
    while written < target:
        lines = request_lines(n)
        failures += n % 400 == 7
        text = "\n".join(lines) + "\n"
        chunks.append(text)
        written += len(text)
        n += 1
    data = "".join(chunks).encode()
    if compress:
        (out / "vllm.log.gz").write_bytes(gzip.compress(data, compresslevel=6))
    else:
        (out / "vllm.log").write_bytes(data)
    return n, failures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--mb", type=int, default=200)
    parser.add_argument("--gzip", action="store_true")
    args = parser.parse_args()
    requests, failures = write(args.out, args.mb, args.gzip)
    print(f"{requests} requests, {failures} logged failures")


if __name__ == "__main__":
    main()
