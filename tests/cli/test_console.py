"""The console helpers: JSON written in bounded pieces, the same text json.dumps gives."""

from __future__ import annotations

import json

import pytest

from harmony_doctor.cli.console import print_json


class _Writes:
    def __init__(self) -> None:
        self.sizes: list[int] = []
        self.parts: list[str] = []

    def write(self, text: str) -> int:
        self.sizes.append(len(text))
        self.parts.append(text)
        return len(text)


def test_a_large_record_is_written_in_pieces_as_json_dumps_would_write_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # decode --format json of one context: a record per token (131,072 of them)
    record = {
        "tokens": [{"id": n, "text": f"tok\u00e9{n}", "special": n % 7 == 0} for n in range(50_000)]
    }
    out = _Writes()
    monkeypatch.setattr("sys.stdout", out)
    print_json(record)
    assert "".join(out.parts) == json.dumps(record, indent=2, ensure_ascii=True) + "\n"
    assert len(out.sizes) > 10  # not one string of the whole (millions of pieces and their join)
    assert max(out.sizes) < 1 << 17


def test_a_small_record_is_one_write(monkeypatch: pytest.MonkeyPatch) -> None:
    out = _Writes()
    monkeypatch.setattr("sys.stdout", out)
    print_json({"schema": "x/1", "text": "<|start|>\x1b"})
    assert out.parts == ['{\n  "schema": "x/1",\n  "text": "<|start|>\\u001b"\n}\n']
