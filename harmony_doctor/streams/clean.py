"""Which logged completions need no diagnosis: our replay's clean verdict, remembered by the
stream's shape (`clean_key`). Light to import: a scan loads the replay only at the first
verdict it does not know yet, so a scan that finds no completion never loads it."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from harmony_doctor.choices import ParseRole
from harmony_doctor.harmony.vocab import FIRST_SPECIAL, MESSAGE, Vocab
from harmony_doctor.native import clean_key as native_clean_key
from harmony_doctor.native import native_for, use_native


def clean_key(tokens: Sequence[int], native: bool | None = None) -> tuple[int, ...]:
    """The stream with every run of ordinary tokens after a `<|message|>` cut to one token, 0.

    Such a run is message content (or lies past a fault): the replay only tells ordinary from
    special tokens there, and `_warnings` reads headers and the special tokens of content, never
    its text. So `replay_is_clean` gives the same verdict on the key as on the stream, and
    completions that differ only in what they say share one replay. The Rust extension
    computes it when built (`clean_key_reference` is this in Python, tested equal); `native`
    says whether to use it (None: `use_native()`, which reads the environment at each call).
    """
    if native_for(native):
        try:
            return native_clean_key(tokens, FIRST_SPECIAL, MESSAGE)
        except OverflowError:  # an id past 64 bits: only the reference can hold it
            pass
    return clean_key_reference(tokens)


def clean_key_reference(tokens: Sequence[int]) -> tuple[int, ...]:
    """`clean_key` in Python."""
    out: list[int] = []
    body = kept = False
    for token in tokens:
        if token >= FIRST_SPECIAL:
            body, kept = token == MESSAGE, False
            out.append(token)
        elif not body:
            out.append(token)
        elif not kept:
            out.append(0)
            kept = True
    return tuple(out)


class CleanStreams:
    """`replay_is_clean` for one vocabulary and role, remembered by `clean_key`.

    `vocab` may be a function that loads it: it is called at the first verdict not known yet.
    At most `size` verdicts and `tokens` key tokens are remembered (then all are forgotten): a
    key is short for a well-formed stream (its headers), but holds the whole header of one
    that never wrote `<|message|>`, and a day of those must not be held by the count alone.
    """

    def __init__(
        self,
        vocab: Vocab | Callable[[], Vocab],
        role: ParseRole,
        size: int = 4096,
        tokens: int = 256 * 1024,
    ) -> None:
        self._vocab, self.role, self.size, self.tokens = vocab, role, size, tokens
        self.known: dict[tuple[int, ...], bool] = {}
        self.held = 0  # tokens in the keys of `known`
        self.native = use_native()  # decided once, not at every completion

    def __call__(self, tokens: Sequence[int]) -> bool:
        return self.by_key(clean_key(tokens, self.native))

    def by_key(self, key: tuple[int, ...]) -> bool:
        """The verdict on every stream whose `clean_key` is `key`."""
        verdict = self.known.get(key)
        if verdict is None:
            vocab = self._vocab if isinstance(self._vocab, Vocab) else self._vocab()
            self._vocab = vocab
            from harmony_doctor.streams.diagnose import replay_is_clean

            verdict = replay_is_clean(key, vocab, self.role)
            if len(key) <= self.tokens:  # a longer one is not remembered at all
                if len(self.known) >= self.size or self.held + len(key) > self.tokens:
                    self.known.clear()
                    self.held = 0
                self.known[key] = verdict
                self.held += len(key)
        return verdict
