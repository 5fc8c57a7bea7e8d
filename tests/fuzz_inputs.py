"""Hypothesis strategies for hostile inputs: bytes, broken text, JSON, logs, compressed data."""

from __future__ import annotations

import gzip
import json
from typing import Any

import zstandard
from hypothesis import strategies as st

from tests.helpers import SAMPLES

# Excerpts every fuzzer mutates: the project's own samples (never the shared corpus).
SAMPLE_TEXTS = tuple(
    p.read_bytes()[:6000] for p in sorted(SAMPLES.iterdir()) if p.is_file() and p.suffix != ".md"
)

NASTY_PIECES = (
    "\x00",
    "\x1b[31m",
    "\x1b]8;;http://x\x07",
    "\u202e",
    "\u2066",
    "\r",
    "\x7f",
    "\ufeff",
    "[bold]",
    "[/INST]",
    "[link=http://x]",
    ":warning:",
    "<|start|>",
    "<|end|>",
    "<|message|>",
    "<|channel|>",
    "<|constrain|>",
    "<|call|>",
    "<|return|>",
    "<|reserved_200013|>",
    "200002",
    "200006",
    "-1",
    "99999999999999999999999999",
    "1e400",
    "NaN",
    "[",
    "]",
    "{",
    "}",
    '"',
    ",",
    "\n",
    "openai_harmony.HarmonyError: ",
    "Unexpected token 200002 while expecting start token 200006",
    'unexpected tokens remaining in message header: Some("',
    "Unknown role: ",
    "output_token_ids: [",
    "Generated response chatcmpl-1 (streaming delta): output: '', output_token_ids: [",
    "finish_reason: stop",
    "Traceback (most recent call last):\n",
    "(APIServer pid=7) ERROR 11-27 10:00:05 [serving_chat.py:1145] ",
    '  File "/x/openai_harmony/__init__.py", line 637, in process\n',
    '{"error": {"message": "',
    "data: ",
    "\ud800".encode("utf-8", "surrogatepass").decode("utf-8", "replace"),
)


def _nested_json(depth: int, kind: str) -> str:
    if kind == "list":
        return "[" * depth + "1" + "]" * depth
    if kind == "dict":
        return '{"a":' * depth + "1" + "}" * depth
    return "[" * depth  # never closed


nested_json = st.builds(
    _nested_json, st.integers(1, 5000), st.sampled_from(["list", "dict", "open"])
)

json_values: st.SearchStrategy[Any] = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=5)
        | st.dictionaries(
            st.sampled_from(
                ["output_token_ids", "token_ids", "prompt_token_ids", "choices", "text", "id", "x"]
            )
            | st.text(max_size=8),
            children,
            max_size=5,
        )
    ),
    max_leaves=30,
)
json_text = json_values.map(json.dumps)

hostile_text = st.lists(st.sampled_from(NASTY_PIECES) | st.text(max_size=12), max_size=40).map(
    "".join
)


@st.composite
def mutated_sample(draw: st.DrawFn) -> bytes:
    """A real sample, cut, spliced and sprinkled with hostile pieces."""
    data = bytearray(draw(st.sampled_from(SAMPLE_TEXTS)))
    for _ in range(draw(st.integers(0, 6))):
        op = draw(st.sampled_from(["cut", "insert", "delete", "flip", "duplicate"]))
        at = draw(st.integers(0, len(data)))
        if op == "cut":
            del data[at:]
        elif op == "insert":
            piece = draw(st.sampled_from(NASTY_PIECES) | st.text(max_size=8))
            data[at:at] = piece.encode("utf-8", "surrogatepass")
        elif op == "delete":
            del data[at : at + draw(st.integers(1, 64))]
        elif op == "flip" and at < len(data):
            data[at] = draw(st.integers(0, 255))
        elif op == "duplicate":
            data[at:at] = data[at : at + draw(st.integers(1, 200))]
    return bytes(data)


raw_input: st.SearchStrategy[bytes] = st.one_of(
    st.binary(max_size=400),
    hostile_text.map(lambda t: t.encode("utf-8", "surrogatepass")),
    json_text.map(str.encode),
    nested_json.map(str.encode),
    mutated_sample(),
)


@st.composite
def compressed(draw: st.DrawFn) -> bytes:
    """gzip or zstd of hostile or real content, maybe cut short or with a flipped byte."""
    body = draw(raw_input)
    packed = gzip.compress(body) if draw(st.booleans()) else zstandard.compress(body)
    cut = draw(st.integers(0, len(packed)))
    packed = packed[:cut] if draw(st.booleans()) else packed
    if packed and draw(st.booleans()):
        at = draw(st.integers(0, len(packed) - 1))
        packed = packed[:at] + bytes([draw(st.integers(0, 255))]) + packed[at + 1 :]
    return packed
