"""A vLLM-shaped log with known failures (the shape of benchmarks/make_logs.py), and its truth:
failures by the code scan gives them."""

from __future__ import annotations

from collections import Counter

# (message, the code harmony-doctor gives it)
MESSAGES = (
    ("Unexpected token 200002 while expecting start token 200006", "HD111"),
    ('unexpected tokens remaining in message header: Some("I cannot help")', "HD101"),
    ("Unexpected token 12606 while expecting start token 200006", "HD112"),
    ("Unknown role: assistantassistant", "HD121"),
)


def request(n: int, every: int = 7) -> tuple[list[str], str | None]:
    """The lines of request n (four processes, four requests a second from 2026-11-01 10:00)
    and the code of its failure, if it fails."""
    pid = 1000 + n % 4
    p = f"(APIServer pid={pid}) "
    second = n // 4
    stamp = f"11-01 10:{second // 60 % 60:02d}:{second % 60:02d}"
    lines = [
        p + f"INFO {stamp} [logger.py:43] Received request chatcmpl-{n:08x}: params: "
        "SamplingParams(n=1, temperature=1.0), lora_request: None.",
        p + f'INFO:     10.0.0.{n % 250}:{30000 + n} - "POST /v1/chat/completions HTTP/1.1" 200 OK',
    ]
    if n % every != 3:
        return lines, None
    message, code = MESSAGES[(n // every) % len(MESSAGES)]
    prefix = p + f"ERROR {stamp} [serving_chat.py:1145] "
    lines += [
        prefix + "Error in chat completion stream generator.",
        prefix + "Traceback (most recent call last):",
        prefix + '  File "/usr/local/lib/python3.12/dist-packages/vllm/entrypoints/openai/'
        'serving_chat.py", line 681, in chat_completion_stream_generator',
        prefix + "    harmony_parser.process(token_id)",
        prefix + '  File "/usr/local/lib/python3.12/dist-packages/openai_harmony/__init__.py", '
        "line 637, in process",
        prefix + "    self._inner.process(token)",
        prefix + f"openai_harmony.HarmonyError: {message}",
    ]
    return lines, code


def log(first: int, count: int, every: int = 7) -> tuple[bytes, Counter[str]]:
    """Requests first..first+count-1 as log bytes, and their failures by code."""
    truth: Counter[str] = Counter()
    lines: list[str] = []
    for n in range(first, first + count):
        more, code = request(n, every)
        lines += more
        if code is not None:
            truth[code] += 1
    return ("\n".join(lines) + "\n").encode(), truth


def cri(data: bytes, stream: str = "stdout") -> bytes:
    """The lines as the kubelet's CRI log file holds them."""
    out = []
    for i, line in enumerate(data.decode().splitlines()):
        out.append(f"2026-11-01T10:00:{i % 60:02d}.000000000Z {stream} F {line}")
    return ("\n".join(out) + "\n").encode()
