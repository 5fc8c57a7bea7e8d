"""What guided decoding with the emitted Harmony grammar costs per token, measured in llguidance.

A server with llguidance does two things per generated token: compute the mask of allowed
tokens (`compute_bitmask`, 201,089 bits here) and advance the matcher (`consume_token`). This
times both on generated well-formed completions, split into header tokens and body tokens, for
the default grammar and a narrowed one (declared tools, required stop tokens), and reports them
against a reference grammar that allows every ordinary token in the same process (`start:
<[0-199997]>*`), so the ratio says what the Harmony structure adds. Setup (building the
o200k_harmony tokenizer from the vocabulary, compiling the grammar) is reported separately.

    python benchmarks/grammar.py [--streams 200] [--seed 1] [--json]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # for tests.generators

from harmony_doctor.harmony.vocab import FIRST_SPECIAL, MESSAGE, STOP_TOKENS, Vocab, load_vocab
from harmony_doctor.streams import grammar as g
from tests import generators

REFERENCE = f"start: <[0-{FIRST_SPECIAL - 1}]>*\n"


def streams(vocab: Vocab, count: int, seed: int) -> list[list[int]]:
    rng = random.Random(seed)
    return [vocab.encode(generators.well_formed(rng)) for _ in range(count)]


def positions(tokens: list[int], vocab: Vocab) -> list[str]:
    """For each token: "recipient" (inside a `to=NAME`), "header" or "body"."""
    kinds: list[str] = []
    header: bytes | None = b""  # the open header's bytes (specials as "<"); None in a body
    for token in tokens:
        if header is None:
            kinds.append("body")
            if token in STOP_TOKENS:
                header = b""
            continue
        inside = re.search(rb" to=[^ <]*$", header) is not None
        kinds.append("recipient" if inside else "header")
        header = (
            None
            if token == MESSAGE
            else header + (b"<" if token >= FIRST_SPECIAL else vocab.token_bytes(token))
        )
    return kinds


def time_grammar(lark: str, vocab: Vocab, data: list[list[int]]) -> dict[str, Any]:
    """Per-token microseconds for mask + consume, over every token of every stream."""
    started = time.perf_counter()
    base = g.matcher(lark, vocab)
    compile_ms = (time.perf_counter() - started) * 1000
    mask_us: dict[str, list[float]] = {"recipient": [], "header": [], "body": []}
    consume_us: list[float] = []
    clock = time.perf_counter_ns
    for tokens in data:
        m = base.deep_copy()
        for token, where in zip(tokens, positions(tokens, vocab), strict=True):
            t0 = clock()
            m.compute_bitmask()
            t1 = clock()
            ok = m.consume_token(token)
            t2 = clock()
            if not ok:
                raise SystemExit(f"grammar refused a well-formed stream: {m.get_error()}")
            mask_us[where].append((t1 - t0) / 1000)
            consume_us.append((t2 - t1) / 1000)
    every = [us for values in mask_us.values() for us in values]
    return {
        "compile_ms": round(compile_ms, 2),
        "tokens": len(every),
        "mask_us_mean": round(statistics.fmean(every), 2),
        "mask_us_p50": round(statistics.median(every), 2),
        "mask_us_p99": round(statistics.quantiles(every, n=100)[98], 2),
        **{
            f"mask_us_{where}_median": round(statistics.median(values or [0.0]), 2)
            for where, values in mask_us.items()
        },
        "recipient_tokens": len(mask_us["recipient"]),
        "consume_us_mean": round(statistics.fmean(consume_us), 2),
        "per_token_us": round(statistics.fmean(every) + statistics.fmean(consume_us), 2),
    }


def reference_time(vocab: Vocab, data: list[list[int]]) -> float:
    """Mask + consume per token for the any-ordinary-token grammar on the same bodies."""
    bodies = [[t for t in tokens if t < FIRST_SPECIAL] for tokens in data]
    return float(time_grammar(REFERENCE, vocab, bodies)["per_token_us"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    vocab = load_vocab()
    started = time.perf_counter()
    g.llg_tokenizer(vocab)
    tokenizer_s = time.perf_counter() - started
    data = streams(vocab, args.streams, args.seed)
    narrowed = g.GrammarOptions(
        tools=("functions.get_weather", "functions.lookup", "browser.search"),
        require_return=True,
        require_call=False,
    )
    time_grammar(g.emit(g.GrammarOptions(), "lark"), vocab, data[:20])  # warm caches and CPU
    reference_us = reference_time(vocab, data)
    results: dict[str, Any] = {
        "llguidance": _version(),
        "tokenizer_build_s": round(tokenizer_s, 2),
        "streams": len(data),
        "reference_any_token_us": reference_us,
    }
    for name, options in (("default", g.GrammarOptions()), ("narrowed", narrowed)):
        kept = data if name == "default" else [s for s in data if _fits(s, options, vocab)]
        timing = time_grammar(g.emit(options, "lark"), vocab, kept)
        timing["streams"] = len(kept)
        timing["ratio_to_reference"] = round(timing["per_token_us"] / reference_us, 2)
        results[name] = timing
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"llguidance {results['llguidance']}; tokenizer built in {tokenizer_s:.2f} s")
    print(f"reference grammar (any ordinary token): {reference_us:.2f} us/token")
    for name in ("default", "narrowed"):
        r = results[name]
        print(
            f"{name:9} {r['streams']} streams, {r['tokens']} tokens; compile {r['compile_ms']} ms; "
            f"mask {r['mask_us_mean']} us (p50 {r['mask_us_p50']}, p99 {r['mask_us_p99']}; "
            f"medians: body {r['mask_us_body_median']}, header {r['mask_us_header_median']}, "
            f"recipient name {r['mask_us_recipient_median']}) + consume "
            f"{r['consume_us_mean']} us = {r['per_token_us']} us/token, "
            f"{r['ratio_to_reference']}x the reference"
        )


def _fits(tokens: list[int], options: g.GrammarOptions, vocab: Vocab) -> bool:
    m = g.matcher(g.emit(options, "lark"), vocab)
    return g.run(m, tokens, detail=False).complete


def _version() -> str:
    import llguidance

    return str(llguidance.__version__)


if __name__ == "__main__":
    main()
