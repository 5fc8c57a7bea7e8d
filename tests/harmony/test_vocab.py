"""vocab.py: the bundled file, its hash, tiktoken and openai-harmony built from it offline."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from harmony_doctor.errors import VocabError
from harmony_doctor.harmony import vocab as vocab_module
from harmony_doctor.harmony.vocab import (
    VOCAB_SHA256,
    Vocab,
    harmony_special_tokens,
    load_vocab,
    locate_vocab,
)
from tests.helpers import shared


def test_bundled_file_has_the_published_hash() -> None:
    path = locate_vocab()
    assert path.name == "o200k_base.tiktoken"
    assert hashlib.sha256(path.read_bytes()).hexdigest() == VOCAB_SHA256


def test_bundled_file_matches_shared_sha256sums() -> None:
    sums = shared("vocab", "SHA256SUMS").read_text().split()
    assert sums[0] == VOCAB_SHA256


def test_special_tokens_match_tiktoken_definition(
    monkeypatch: pytest.MonkeyPatch, vocab: Vocab
) -> None:
    """tiktoken's own o200k_harmony constructor, fed our ranks instead of a download."""
    import tiktoken_ext.openai_public as public

    ranks = {piece: rank for rank, piece in enumerate(vocab._pieces)}
    monkeypatch.setattr(public, "load_tiktoken_bpe", lambda *a, **k: ranks)
    theirs = public.o200k_harmony()
    assert theirs["special_tokens"] == harmony_special_tokens()
    assert theirs["pat_str"] == vocab_module.O200K_PAT_STR


def test_tiktoken_and_harmony_encode_alike(vocab: Vocab) -> None:
    text = "<|start|>assistant<|channel|>final<|message|>Héllo, wörld! 你好 🙂<|return|>"
    ours = vocab.encode(text)
    theirs = vocab.tiktoken.encode(text, allowed_special="all")
    assert ours == list(theirs)
    assert vocab.decode(ours) == text


def test_token_bytes_of_specials_and_ordinary(vocab: Vocab) -> None:
    assert vocab.token_bytes(200006) == b"<|start|>"
    assert vocab.token_bytes(200099) == b"<|reserved_200099|>"
    assert vocab.token_bytes(12606) == b"comment"
    assert vocab.is_special(199998) and not vocab.is_special(199997)


def test_harmony_parse_reports_raise_index(vocab: Vocab) -> None:
    tokens = vocab.encode("<|channel|>final<|message|>ok<|end|><|return|>")
    outcome = vocab.harmony_parse(tokens, "assistant", strict=True)
    assert outcome.error == "Unexpected token 200002 while expecting start token 200006"
    assert outcome.raise_index == len(tokens) - 1
    assert outcome.messages[0]["channel"] == "final"
    assert outcome.messages[0]["text"] == "ok"


def test_eos_error_raises_at_len(vocab: Vocab) -> None:
    tokens = vocab.encode("<|channel|>analysis")
    outcome = vocab.harmony_parse(tokens, "assistant", strict=True)
    assert outcome.error is not None and "EOS" in outcome.error
    assert outcome.raise_index == len(tokens)


def _tampered_copy(tmp_path: Path) -> Path:
    """The bundled vocabulary with one bit flipped, under its own name."""
    bad = tmp_path / "o200k_base.tiktoken"
    data = bytearray(locate_vocab().read_bytes())
    data[100] ^= 1
    bad.write_bytes(bytes(data))
    return bad


def test_tampered_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(VocabError, match="not o200k_base"):
        Vocab(_tampered_copy(tmp_path))


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(VocabError, match="cannot read"):
        load_vocab(tmp_path / "nope.tiktoken")


def test_env_var_takes_precedence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TIKTOKEN_ENCODINGS_BASE", str(tmp_path))
    assert locate_vocab() == tmp_path / "o200k_base.tiktoken"
    assert locate_vocab(Path("/x/y.tiktoken")) == Path("/x/y.tiktoken")


def test_explicit_file_with_other_name_loads_harmony(tmp_path: Path) -> None:
    copy = tmp_path / "my-vocab.bin"
    copy.write_bytes(locate_vocab().read_bytes())
    loaded = Vocab(copy)
    outcome = loaded.harmony_parse(
        loaded.encode("<|channel|>final<|message|>hi"), "assistant", True
    )
    assert outcome.error is None


def test_harmony_loader_env_is_restored(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("TIKTOKEN_ENCODINGS_BASE", raising=False)
    copy = tmp_path / "o200k_base.tiktoken"
    copy.write_bytes(locate_vocab().read_bytes())
    Vocab(copy).harmony  # noqa: B018 - loading is the point
    import os

    assert "TIKTOKEN_ENCODINGS_BASE" not in os.environ


def test_cli_reports_tampered_vocab_in_one_line(tmp_path: Path) -> None:
    from tests.helpers import run

    bad = tmp_path / "o200k_base.tiktoken"
    bad.write_bytes(b"not a vocabulary\n")
    result = run(["decode", "--vocab", str(bad), "-"], "[1, 2, 3]")
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1
    assert "not o200k_base" in result.stderr
    assert "Traceback" not in result.stderr


# --- issue 12, bullet 3: the vocabulary loaded once, its parsed ranks cached by hash ----------


@pytest.fixture
def cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("HARMONY_DOCTOR_CACHE", str(folder))
    return folder


def test_latency_ranks_cache_is_keyed_by_the_vocabulary_hash(cache: Path) -> None:
    from harmony_doctor.harmony.ranks import cache_path

    Vocab(locate_vocab()).token_bytes(12606)
    written = cache_path(VOCAB_SHA256)
    assert written.parent == cache and VOCAB_SHA256 in written.name
    assert [p.name for p in cache.iterdir()] == [written.name]
    fresh = Vocab(locate_vocab())
    assert fresh.token_bytes(12606) == b"comment"
    assert fresh._ranks.pieces()[:3] == [b"!", b'"', b"#"]


def test_latency_cache_for_another_hash_is_not_used(cache: Path) -> None:
    from harmony_doctor.harmony.ranks import cache_path

    Vocab(locate_vocab()).token_bytes(0)
    other = "0" * 64
    cache_path(VOCAB_SHA256).rename(cache_path(other))
    # The file's own contents name the hash too: renamed into place it is refused.
    cache_path(other).rename(cache_path(VOCAB_SHA256))
    data = bytearray(cache_path(VOCAB_SHA256).read_bytes())
    header = len(b"harmony-doctor ranks 1\n")
    data[header] ^= 0xFF  # another vocabulary's hash inside
    cache_path(VOCAB_SHA256).write_bytes(bytes(data))
    assert Vocab(locate_vocab()).token_bytes(12606) == b"comment"
    assert cache_path(VOCAB_SHA256).read_bytes() != bytes(data)  # rebuilt


@pytest.mark.parametrize("damage", ["flip", "cut", "empty"])
def test_latency_corrupt_cache_is_rebuilt(cache: Path, damage: str) -> None:
    from harmony_doctor.harmony.ranks import cache_path

    Vocab(locate_vocab()).token_bytes(0)
    path = cache_path(VOCAB_SHA256)
    good = path.read_bytes()
    data = bytearray(good)
    if damage == "flip":
        data[len(data) // 2] ^= 1
    elif damage == "cut":
        del data[-100:]
    else:
        data.clear()
    path.write_bytes(bytes(data))
    vocab = Vocab(locate_vocab())
    assert vocab.token_bytes(12606) == b"comment"
    assert vocab.decode([12606, 200006]) == "comment<|start|>"
    assert path.read_bytes() == good


def test_latency_unwritable_cache_only_costs_time(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    monkeypatch.setenv("HARMONY_DOCTOR_CACHE", str(blocker / "cache"))
    assert Vocab(locate_vocab()).token_bytes(12606) == b"comment"
    assert not list(tmp_path.glob("**/*.ranks"))


def test_latency_tampered_vocabulary_is_refused_with_a_cache_present(
    cache: Path, tmp_path: Path
) -> None:
    Vocab(locate_vocab()).token_bytes(0)
    with pytest.raises(VocabError, match="not o200k_base"):
        Vocab(_tampered_copy(tmp_path))


def test_latency_cache_folder_order(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from harmony_doctor.harmony.ranks import cache_folder

    monkeypatch.delenv("HARMONY_DOCTOR_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_folder() == tmp_path / "xdg" / "harmony-doctor"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_folder() == tmp_path / "home" / ".cache" / "harmony-doctor"
    monkeypatch.setenv("HARMONY_DOCTOR_CACHE", str(tmp_path / "mine"))
    assert cache_folder() == tmp_path / "mine"


def test_latency_token_bytes_alike_through_harmony_and_ranks(cache: Path) -> None:
    """Once openai-harmony is loaded, token bytes come from it: the same bytes as the ranks."""
    from harmony_doctor.harmony.ranks import parse_ranks

    through_harmony = Vocab(locate_vocab())
    through_harmony.harmony  # noqa: B018 - loading is the point
    parsed = parse_ranks(locate_vocab().read_bytes(), locate_vocab())
    for token in (0, 1, 12606, 100000, 199997):
        assert through_harmony.token_bytes(token) == parsed[token]
    assert "_ranks" not in through_harmony.__dict__  # no second copy was loaded


@pytest.mark.parametrize(
    "text",
    [
        "<|start|>assistant<|channel|>commentary to=functions.f <|constrain|>json"
        '<|message|>{"a": [1, 2.5e-3, "x\\ny"]}<|call|>',
        "  leading spaces\r\n\ttabs\n\n\nand 1234567 numbers, CAPS & émoji 🙂🙂 日本語のテキスト",
        "<|reserved_200099|><|endoftext|>don't I'LL we've",
        "<|endofprompt|> is 200018 in tiktoken only; <|reserved_201088|> in openai-harmony only",
        "",
    ],
)
def test_latency_harmony_encoder_equals_tiktoken(vocab: Vocab, text: str) -> None:
    """encode goes through openai-harmony only where that is exact: tiktoken is the reference."""
    assert vocab.encode(text) == vocab.tiktoken.encode(text, allowed_special="all")


# --- issue 12 bullet 3: verdicts through openai-harmony's compiled core, without its package ---

_STREAMS = [
    "<|channel|>final<|message|>ok<|end|><|return|>",
    "<|channel|>analysis<|message|>think<|end|><|start|>assistant<|channel|>commentary "
    'to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris"}<|call|>',
    "<|channel|>final<|message|>Héllo 🙂<|return|>",
    "<|channel|>analysis",
    "We must refuse.<|channel|>final<|message|>no<|return|>",
    "<|start|>user<|message|>hi<|end|><|start|>assistant<|channel|>final<|message|>yo<|return|>",
    "<|channel|>final to=tool<|message|>x<|end|><|start|>critic<|message|>y<|end|>",
    "<|channel|>final<|message|>x<|start|>",  # strict and lenient differ
    "<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>{}<|end|>"
    "<|start|>system<|message|>sys<|end|>",  # a tool's name, a system message
]


def _packaged_outcome(vocab: Vocab, tokens: list[int], role: str, strict: bool, eos: bool) -> Any:
    """What openai-harmony's Python package (StreamableParser, Message) makes of a stream."""
    import openai_harmony as oh

    parser = oh.StreamableParser(
        vocab.harmony, oh.Role.ASSISTANT if role == "assistant" else None, strict=strict
    )
    error, index = None, None
    try:
        for index, token in enumerate(tokens):  # noqa: B007
            parser.process(token)
        index = len(tokens)
        if eos:
            parser.process_eos()
        index = None
    except oh.HarmonyError as exc:
        error = str(exc)
    messages = [
        (
            m.author.role.value,
            m.author.name,
            m.channel,
            m.recipient,
            m.content_type,
            "".join(getattr(c, "text", "") for c in m.content),
        )
        for m in parser.messages
    ]
    return error, index, messages


@pytest.mark.parametrize("text", _STREAMS)
@pytest.mark.parametrize(
    ("role", "strict", "eos"),
    [
        ("assistant", True, True),
        ("assistant", False, True),
        ("none", True, True),
        ("assistant", True, False),
    ],
)
def test_latency_verdicts_through_the_core_equal_the_package(
    vocab: Vocab, text: str, role: Any, strict: bool, eos: bool
) -> None:
    tokens = vocab.encode(text)
    ours = vocab.harmony_parse(tokens, role, strict, open_stream=not eos)
    keys = ("role", "name", "channel", "recipient", "content_type", "text")
    as_rows = [tuple(m[k] for k in keys) for m in ours.messages]
    assert (ours.error, ours.raise_index, as_rows) == _packaged_outcome(
        vocab, tokens, role, strict, eos
    )
    if eos:  # one call, the verdict only: the package's parse_messages_from_completion_tokens
        import openai_harmony as oh

        try:
            vocab.harmony.parse_messages_from_completion_tokens(
                tokens, oh.Role.ASSISTANT if role == "assistant" else None, strict=strict
            )
            theirs = None
        except oh.HarmonyError as exc:
            theirs = str(exc)
        assert vocab.harmony_error(tokens, role, strict) == theirs


@pytest.mark.parametrize(
    "text", [*_STREAMS, "lone \ud800 surrogate", "<|reserved_200099|> and plain text", ""]
)
def test_latency_encode_through_the_core_equals_the_package(vocab: Vocab, text: str) -> None:
    assert vocab.encode(text) == vocab.harmony.encode(text, allowed_special="all")


def test_latency_token_explain_loads_the_core_not_the_package(tmp_path: Path) -> None:
    """The pydantic layer of openai-harmony (~0.17 s to import) is not loaded to judge tokens,
    and the package, imported later, uses the very core already loaded."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from harmony_doctor.harmony.vocab import load_vocab\n"
        "v = load_vocab()\n"
        "v.harmony_parse(v.encode('<|channel|>final<|message|>ok<|return|>'), 'assistant', True)\n"
        "print('openai_harmony' in sys.modules, 'pydantic' in sys.modules)\n"
        "core = sys.modules['openai_harmony.openai_harmony']\n"
        "import openai_harmony\n"
        "print(openai_harmony.HarmonyError is core.HarmonyError, v.harmony._inner is v.harmony_core)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False", "True", "True"]


def test_latency_the_core_loads_once_when_threads_ask_together() -> None:
    import subprocess
    import sys

    code = (
        "import threading\n"
        "from harmony_doctor.harmony.vocab import harmony_bindings\n"
        "got = []\n"
        "threads = [threading.Thread(target=lambda: got.append(harmony_bindings()))"
        " for _ in range(8)]\n"
        "[t.start() for t in threads]; [t.join() for t in threads]\n"
        "print(len(got), len({id(m) for m in got}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["8", "1"]


def _refused_in_a_bounded_child(vocab: str, env: dict[str, str] | None = None) -> Any:
    """`decode --vocab VOCAB` in a child held to 1 GiB of address space and 60 s, so that a
    vocabulary read without a bound fails the test instead of the machine."""
    import os
    import subprocess
    import sys

    child = (
        "import resource, runpy, sys; resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30)); "
        "sys.argv = ['harmony-doctor', *sys.argv[1:]]; "
        "runpy.run_module('harmony_doctor', run_name='__main__')"
    )
    args = ["decode", "-"] + (["--vocab", vocab] if vocab else [])
    return subprocess.run(
        [sys.executable, "-c", child, *args],
        input="[1, 2, 3]",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, **(env or {})},
    )


def test_a_device_as_vocabulary_is_refused_before_reading() -> None:
    done = _refused_in_a_bounded_child("/dev/zero")
    assert done.returncode == 2
    assert done.stderr == (
        "harmony-doctor: error: vocabulary /dev/zero is not a regular file; refusing to read it\n"
    )


def test_a_device_found_through_the_encodings_base_is_refused(tmp_path: Path) -> None:
    (tmp_path / "o200k_base.tiktoken").symlink_to("/dev/zero")
    done = _refused_in_a_bounded_child("", {"TIKTOKEN_ENCODINGS_BASE": str(tmp_path)})
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert "is not a regular file" in done.stderr


def test_a_fifo_as_vocabulary_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    import os
    import threading

    fifo = tmp_path / "vocab.fifo"
    os.mkfifo(fifo)
    outcome: list[BaseException] = []

    def read() -> None:
        try:
            vocab_module.read_verified(fifo)
        except VocabError as exc:
            outcome.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(20)
    if reader.is_alive():  # it waits on the FIFO: release it before failing
        with open(fifo, "wb"):
            pass
        reader.join(5)
        pytest.fail("read_verified waited on a FIFO")
    assert "is not a regular file" in str(outcome[0])


def test_a_file_of_another_size_is_refused_before_reading(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    big = tmp_path / "o200k_base.tiktoken"
    with big.open("wb") as out:
        out.truncate(300 << 20)  # sparse: 300 MiB that cost nothing to make
    monkeypatch.setattr(vocab_module, "_CHUNK", None)  # any read would now raise TypeError
    with pytest.raises(
        VocabError, match=r"not o200k_base \(314,572,800 bytes, expected 3,613,922\)"
    ):
        vocab_module.read_verified(big)


def test_the_vocabulary_is_hashed_in_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vocab_module, "_CHUNK", 4096)
    data = vocab_module.read_verified(locate_vocab())
    assert hashlib.sha256(data).hexdigest() == VOCAB_SHA256
    assert len(data) == vocab_module.VOCAB_BYTES


def test_the_longest_token_is_as_long_as_said() -> None:
    pieces = Vocab(locate_vocab())._pieces
    assert max(len(p) for p in pieces) == vocab_module.LONGEST_TOKEN_BYTES


@pytest.mark.parametrize(
    "text",
    [
        "hello world, " * 500 + "tail",
        "a  b\tc \n d" * 300,
        "no_spaces_at_all" * 200,
        "<|end|> <|start|>x \ud800 y " * 100,  # special-token strings and a lone surrogate
        "é ü ß 1 2 3 _ _ ²  x" * 200,
    ],
    ids=["prose", "whitespace", "uncut", "specials", "unicode"],
)
def test_counting_in_pieces_counts_what_the_whole_text_encodes_to(
    monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    loaded = Vocab(locate_vocab())
    whole = loaded.harmony_core.encode(
        text.encode("utf-16", "surrogatepass").decode("utf-16", "replace"), []
    )
    monkeypatch.setattr(vocab_module, "_COUNT_PIECE", 7)  # a cut every few words
    assert loaded.count_ordinary(text, 10**9) == len(whole)
    assert loaded.count_ordinary(text, 3) > 3
