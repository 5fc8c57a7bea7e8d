"""Types of the Rust scan core (native/src/lib.rs); scan/core.py wraps it as NativeCore."""

from typing import Any

class Core:
    def __init__(
        self, before: int, after: int, max_line: int, max_window: int, ids: bool
    ) -> None: ...
    def feed(
        self, data: bytes, meta: list[tuple[int, bytes | None, int | None]] | None = None
    ) -> tuple[list[Any], list[Any]]: ...
    def finish(self) -> tuple[list[Any], list[Any]]: ...
    def stats(self) -> tuple[Any, ...]: ...

def vllm_output_line(
    line: bytes, vocab_size: int
) -> tuple[str, bool, bool, list[int] | None, str | None] | None: ...
