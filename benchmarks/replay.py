"""Replay speed against openai-harmony's own parser on a 100k-token stream, side by side.

Reports ratios, not absolute limits: our replay (the position-keeping state machine plus the
origin scan) and our whole `diagnose` (replay + openai-harmony strict and lenient, token by
token) against `parse_messages_from_completion_tokens` on the same tokens in the same process.
Also times `harmony-doctor explain` on the stream and `harmony-doctor --help` end to end.

    python benchmarks/replay.py [--tokens 100000] [--repeat 5] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harmony_doctor.harmony.replay import replay
from harmony_doctor.harmony.vocab import Vocab, load_vocab
from harmony_doctor.models import TokenInput
from harmony_doctor.streams.diagnose import diagnose

PROSE = (
    "The user asks about the migration patterns of arctic terns. We should recall that they "
    "travel from the Arctic to the Antarctic and back each year, roughly 70,000 km — the "
    "longest known migration. Let's also mention geolocator studies (2010, Egevang et al.) and "
    "explain why the route zig-zags with prevailing winds. Ünïcödé and 中文 keep bytes honest. "
)


def make_stream(vocab: Vocab, size: int, failing: bool) -> list[int]:
    """A completion of about `size` tokens: long analysis, then a final answer.

    With `failing`, the second message starts with prose instead of a header (the seed's
    failure): openai-harmony raises at the `<|message|>` that finally arrives.
    """
    body = vocab.encode(PROSE)
    half = size // 2
    analysis = (body * (half // len(body) + 1))[:half]
    final = (body * (half // len(body) + 1))[: size - half - 20]
    head = vocab.encode("<|channel|>analysis<|message|>")
    middle = vocab.encode("<|end|><|start|>assistant")
    if failing:
        return head + analysis + middle + final + vocab.encode("<|message|>ok<|return|>")
    opening = vocab.encode("<|channel|>final<|message|>")
    return head + analysis + middle + opening + final + vocab.encode("<|return|>")


def best_of(repeat: int, fn: Callable[[], Any]) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def harmony_bulk(vocab: Vocab, tokens: list[int]) -> None:
    import openai_harmony

    with contextlib.suppress(openai_harmony.HarmonyError):
        vocab.harmony.parse_messages_from_completion_tokens(tokens, openai_harmony.Role.ASSISTANT)


def cli_seconds(args: list[str], repeat: int) -> float:
    exe = Path(sys.executable).with_name("harmony-doctor")
    command = [str(exe), *args] if exe.exists() else [sys.executable, "-m", "harmony_doctor", *args]
    return best_of(repeat, lambda: subprocess.run(command, capture_output=True, check=False))


def measure(size: int, repeat: int) -> dict[str, Any]:
    vocab = load_vocab()
    vocab.harmony  # noqa: B018 - load outside the timings
    rows: dict[str, Any] = {"tokens": size, "repeat": repeat, "cases": {}}
    for failing in (False, True):
        tokens = make_stream(vocab, size, failing)
        inp = TokenInput(tuple(tokens), "tokens", "ids")
        reference = best_of(repeat, lambda: harmony_bulk(vocab, tokens))  # noqa: B023
        ours = best_of(repeat, lambda: replay(tokens, vocab, "assistant"))  # noqa: B023
        whole = best_of(repeat, lambda: diagnose(inp, vocab, "assistant"))  # noqa: B023
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
            json.dump(tokens, handle)
        explain = cli_seconds(["explain", "--format", "json", handle.name], max(1, repeat // 2))
        Path(handle.name).unlink()
        rows["cases"]["failing" if failing else "clean"] = {
            "stream_tokens": len(tokens),
            "openai_harmony_parse_s": round(reference, 4),
            "replay_s": round(ours, 4),
            "replay_ratio": round(ours / reference, 2),
            "diagnose_s": round(whole, 4),
            "diagnose_ratio": round(whole / reference, 2),
            "explain_cli_s": round(explain, 3),
        }
    rows["help_cli_s"] = round(cli_seconds(["--help"], repeat), 3)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = measure(args.tokens, args.repeat)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"replay benchmark: {args.tokens} tokens, best of {args.repeat}")
    for name, row in result["cases"].items():
        print(
            f"  {name:8} openai-harmony {row['openai_harmony_parse_s']:.3f}s | "
            f"replay {row['replay_s']:.3f}s ({row['replay_ratio']}x) | "
            f"diagnose {row['diagnose_s']:.3f}s ({row['diagnose_ratio']}x) | "
            f"explain CLI {row['explain_cli_s']:.2f}s"
        )
    print(f"  harmony-doctor --help {result['help_cli_s']:.3f}s")


if __name__ == "__main__":
    main()
