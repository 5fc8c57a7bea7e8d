"""Offline o200k_harmony: the bundled vocabulary, tiktoken and openai-harmony, loaded lazily.

This is the only module that imports tiktoken or openai_harmony. Nothing here ever downloads:
the vocabulary is the file shipped in the package (or one the user names), checked by SHA-256
before use, and openai-harmony is pointed at it through TIKTOKEN_ENCODINGS_BASE.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harmony_doctor.choices import ParseRole
from harmony_doctor.errors import InputError, VocabError
from harmony_doctor.lazy_regex import Pattern

if TYPE_CHECKING:
    from harmony_doctor.harmony.ranks import Ranks

VOCAB_FILENAME = "o200k_base.tiktoken"
VOCAB_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
VOCAB_BYTES = 3_613_922  # o200k_base.tiktoken's size: nothing else is read
_CHUNK = 1 << 20
ENCODINGS_BASE_VAR = "TIKTOKEN_ENCODINGS_BASE"
VOCAB_SIZE = 201088
LONGEST_TOKEN_BYTES = 128  # the most bytes one ordinary token of o200k_base stands for
FIRST_SPECIAL = 199998

# Named special tokens of o200k_harmony (tiktoken's and openai-harmony's definition).
STARTOFTEXT = 199998
ENDOFTEXT = 199999
RETURN = 200002
CONSTRAIN = 200003
CHANNEL = 200005
START = 200006
END = 200007
MESSAGE = 200008
CALL = 200012
ENDOFPROMPT = 200018

NAMED_SPECIALS: dict[int, str] = {
    STARTOFTEXT: "<|startoftext|>",
    ENDOFTEXT: "<|endoftext|>",
    RETURN: "<|return|>",
    CONSTRAIN: "<|constrain|>",
    CHANNEL: "<|channel|>",
    START: "<|start|>",
    END: "<|end|>",
    MESSAGE: "<|message|>",
    CALL: "<|call|>",
}
STOP_TOKENS = frozenset({RETURN, END, CALL})


@functools.cache
def id_objects() -> tuple[int, ...]:
    """One int object per id of the vocabulary (7 MiB, made once). A parsed id list refers to
    these, 8 bytes an id, not to an int made for each (36 bytes): explain holds every logged
    completion and prompt of a vLLM log at once, about 40 MiB of ids per 20 MB of log."""
    return tuple(range(VOCAB_SIZE))


# Special-token strings tiktoken's o200k_harmony and openai-harmony's table encode differently.
# Where count_ordinary may cut a text: a word character and the space after it end a pre-token.
_PIECE_END = Pattern(r"(?<=\w) ")
_COUNT_PIECE = 1 << 20

_SPECIALS_NOT_ALIKE = ("<|endofprompt|>", f"<|reserved_{VOCAB_SIZE}|>")

# o200k_base's split pattern, as tiktoken defines it for o200k_base and o200k_harmony.
O200K_PAT_STR = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)


def special_token_name(token: int) -> str:
    """The text of a special token id (named, or `<|reserved_N|>`)."""
    return NAMED_SPECIALS.get(token, f"<|reserved_{token}|>")


@functools.cache
def harmony_token_limit() -> int:
    """One past the largest id openai-harmony accepts: what it decodes, not a constant.

    openai-harmony 0.0.8 decodes one id past tiktoken's o200k_harmony (201088, as
    `<|reserved_201088|>`). Only ids at or past VOCAB_SIZE need this, so the encoding is loaded
    only when a stream holds one.
    """
    core = load_vocab().harmony_core
    low, high = VOCAB_SIZE - 1, 2 * VOCAB_SIZE  # low decodes, high does not
    while high - low > 1:
        middle = (low + high) // 2
        try:
            core.decode_bytes([middle])
        except Exception:  # openai-harmony raises for an id outside its table
            high = middle
        else:
            low = middle
    return high


def is_valid_token(token: int) -> bool:
    """Whether openai-harmony accepts the id."""
    return 0 <= token < VOCAB_SIZE or (token >= VOCAB_SIZE and token < harmony_token_limit())


def harmony_special_tokens() -> dict[str, int]:
    """The special tokens of tiktoken's `o200k_harmony`, built the way tiktoken builds them."""
    specials = {"<|endoftext|>": ENDOFTEXT, "<|endofprompt|>": ENDOFPROMPT}
    specials |= {name: token for token, name in sorted(NAMED_SPECIALS.items())}
    specials |= {f"<|reserved_{i}|>": i for i in (200000, 200001, 200004, 200009, 200010, 200011)}
    specials |= {f"<|reserved_{i}|>": i for i in range(200013, VOCAB_SIZE)}
    return specials


@dataclass(frozen=True)
class HarmonyOutcome:
    """What openai-harmony's StreamableParser did with a token stream: the ground truth."""

    error: str | None
    raise_index: int | None  # index of the token whose processing raised; len(tokens) at EOS
    messages: tuple[dict[str, Any], ...]  # role, name, channel, recipient, content_type, text


def locate_vocab(explicit: Path | None = None) -> Path:
    """The vocabulary: `--vocab PATH`, then $TIKTOKEN_ENCODINGS_BASE, then the bundled file."""
    if explicit is not None:
        return explicit / VOCAB_FILENAME if explicit.is_dir() else explicit
    base = os.environ.get(ENCODINGS_BASE_VAR)
    if base:
        return Path(base) / VOCAB_FILENAME
    # The package's own folder, as importlib.resources.files would give for an installed or
    # editable package, without importing importlib.resources (~20 ms at every token command).
    return Path(__file__).parent.parent / "data" / VOCAB_FILENAME


def read_verified(path: Path) -> bytes:
    """The vocabulary file's bytes, refused unless its SHA-256 is o200k_base's.

    Only a regular file of o200k_base's exact size is read (a device such as /dev/zero would
    be read forever, a FIFO would block): the size is checked before the first byte is read,
    at most that many bytes are read, and they are hashed as they come.
    """
    import hashlib

    try:
        # Checked before opening: opening a FIFO waits for a writer, and a device may act on
        # being opened. O_NONBLOCK keeps the open itself from waiting should the path change
        # in between; the checks are made again on what was opened.
        _refuse_unless_vocabulary_sized(path, os.stat(path))
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
        with open(fd, "rb", buffering=0) as file:
            _refuse_unless_vocabulary_sized(path, os.fstat(file.fileno()))
            digest, chunks, left = hashlib.sha256(), [], VOCAB_BYTES + 1  # one more: it grew
            while left > 0:
                chunk = file.read(min(_CHUNK, left))
                if not chunk:
                    break
                digest.update(chunk)
                chunks.append(chunk)
                left -= len(chunk)
    except OSError as exc:
        raise VocabError(f"cannot read vocabulary {path}: {exc.strerror or exc}") from None
    data = b"".join(chunks)
    if len(data) != VOCAB_BYTES or digest.hexdigest() != VOCAB_SHA256:
        shown = digest.hexdigest()[:12]
        raise VocabError(
            f"vocabulary {path} is not o200k_base (sha256 {shown}..., "
            f"expected {VOCAB_SHA256[:12]}...); refusing to use it"
        )
    return data


def _refuse_unless_vocabulary_sized(path: Path, info: os.stat_result) -> None:
    import stat

    if not stat.S_ISREG(info.st_mode):
        raise VocabError(f"vocabulary {path} is not a regular file; refusing to read it")
    if info.st_size != VOCAB_BYTES:
        raise VocabError(
            f"vocabulary {path} is not o200k_base ({info.st_size:,} bytes, expected "
            f"{VOCAB_BYTES:,}); refusing to read it"
        )


_ENV_LOCK = threading.Lock()


@contextlib.contextmanager
def _encodings_base(vocab_path: Path) -> Iterator[None]:
    """Point openai-harmony's loader at the folder holding our verified file, for one call."""
    with contextlib.ExitStack() as stack, _ENV_LOCK:
        folder = vocab_path.parent
        if vocab_path.name != VOCAB_FILENAME:
            import tempfile

            tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="hd-vocab-")))
            (tmp / VOCAB_FILENAME).symlink_to(vocab_path.resolve())
            folder = tmp
        previous = os.environ.get(ENCODINGS_BASE_VAR)
        os.environ[ENCODINGS_BASE_VAR] = str(folder)
        try:
            yield
        finally:
            if previous is None:
                del os.environ[ENCODINGS_BASE_VAR]
            else:
                os.environ[ENCODINGS_BASE_VAR] = previous


_CORE = "openai_harmony.openai_harmony"
_HARMONY_GPT_OSS = "HarmonyGptOss"  # str(openai_harmony.HarmonyEncodingName.HARMONY_GPT_OSS)
# What the import system's module lock would do: one thread loads the extension, once.
_CORE_LOCK = threading.Lock()


def harmony_bindings() -> Any:
    """openai-harmony's compiled core (the `openai_harmony.openai_harmony` extension), loaded
    without running the `openai_harmony` package.

    The package is a thin Python layer over this core (its encoding and parser classes hold the
    core's objects and forward every call), plus pydantic models whose import costs ~0.17 s at
    every token command. The verdicts need only the core's encoding and streaming parser, so
    they use it directly: the same Rust code and tables, with no pydantic. Loaded this way the
    module is the one the package itself uses if it is imported later (render does).
    """
    loaded = sys.modules.get(_CORE)
    if loaded is not None:
        return loaded
    with _CORE_LOCK:
        return sys.modules.get(_CORE) or _load_core()


def _load_core() -> Any:
    import importlib.machinery
    import importlib.util

    package = importlib.util.find_spec("openai_harmony")
    spec = None
    if package is not None and package.submodule_search_locations is not None:
        spec = importlib.machinery.PathFinder.find_spec(_CORE, package.submodule_search_locations)
    if spec is None or spec.loader is None:  # pragma: no cover - an unusual installation
        importlib.import_module("openai_harmony")
        return sys.modules[_CORE]
    module = importlib.util.module_from_spec(spec)  # the extension initialises here
    spec.loader.exec_module(module)
    sys.modules[_CORE] = module  # only once whole: other threads read it without the lock
    return module


class Vocab:
    """o200k_harmony for one verified vocabulary file; every heavy piece is built on first use."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._data = read_verified(path)

    @cached_property
    def _ranks(self) -> Ranks:
        # The cache reader (hashlib, tempfile) loads only when token bytes are needed: a log's
        # explain imports this module for its token names and constants alone.
        from harmony_doctor.harmony.ranks import load_ranks

        return load_ranks(self._data, VOCAB_SHA256, self.path, FIRST_SPECIAL)

    @property
    def _pieces(self) -> list[bytes]:
        """Every ordinary token's bytes, in rank order (tiktoken's mergeable ranks)."""
        return self._ranks.pieces()

    def token_bytes(self, token: int) -> bytes:
        """The bytes a token stands for; special tokens give their `<|name|>` text."""
        if token >= FIRST_SPECIAL:
            return special_token_name(token).encode()
        if "_ranks" not in self.__dict__:
            # openai-harmony in memory already holds the same table: no second copy is loaded.
            loaded = self.__dict__.get("harmony_core")
            if loaded is not None:
                return bytes(loaded.decode_bytes([token]))
        return self._ranks[token]

    def is_special(self, token: int) -> bool:
        return token >= FIRST_SPECIAL

    def decode(self, tokens: Sequence[int]) -> str:
        """UTF-8 text of the tokens, invalid bytes replaced by U+FFFD (as openai-harmony does)."""
        return b"".join(self.token_bytes(t) for t in tokens).decode("utf-8", errors="replace")

    @cached_property
    def tiktoken(self) -> Any:
        """tiktoken's `o200k_harmony`, built from this file instead of a download.

        The reference the tests hold openai-harmony's encoder to; commands never build it.
        """
        import tiktoken

        ranks = {piece: rank for rank, piece in enumerate(self._pieces)}
        return tiktoken.Encoding(
            name="o200k_harmony",
            pat_str=O200K_PAT_STR,
            mergeable_ranks=ranks,
            special_tokens=harmony_special_tokens(),
        )

    def encode(self, text: str) -> list[int]:
        """Harmony text to token ids, every special-token string taken as its token.

        Through openai-harmony's own encoder (tiktoken's o200k_harmony inside: the same ranks
        and pattern), so that the one encoding a command parses with is also the one it encodes
        with. The two name two specials differently (openai-harmony has no `<|endofprompt|>`,
        and adds `<|reserved_201088|>`); text holding either goes through tiktoken, the
        reference, which a test holds openai-harmony's encoder equal to everywhere else.
        """
        if any(name in text for name in _SPECIALS_NOT_ALIKE):
            return list(self.tiktoken.encode(text, allowed_special="all"))
        # What openai-harmony's HarmonyEncoding.encode(text, allowed_special="all") does: every
        # special token allowed (so none is refused), and text with lone surrogates retried
        # with them replaced.
        core, allowed = self.harmony_core, self._harmony_specials
        try:
            tokens = core.encode(text, allowed)
        except UnicodeEncodeError:
            text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
            tokens = core.encode(text, allowed)
        return [int(t) for t in tokens]

    def count_ordinary(self, text: str, stop_after: int) -> int:
        """How many tokens `text` encodes to as ordinary text (special-token strings as text,
        as openai-harmony encodes a message's content), or a number past `stop_after` as soon
        as the count passes it.

        Counted in pieces of about a MiB, so that a long text costs no list of all its ids. A
        piece ends only where a word character meets a space: o200k's split pattern never joins
        the two into one pre-token, and each pre-token is encoded on its own, so the pieces
        count exactly what the whole text does. A text with no such place is counted whole.
        """
        core, count, start = self.harmony_core, 0, 0
        while start < len(text) and count <= stop_after:
            cut = (
                _PIECE_END.search(text, start + _COUNT_PIECE)
                if len(text) - start > _COUNT_PIECE
                else None
            )
            end = cut.start() if cut is not None else len(text)
            piece = text[start:end]
            try:
                count += len(core.encode(piece, []))
            except UnicodeEncodeError:  # lone surrogates: replaced, as encode() does
                piece = piece.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
                count += len(core.encode(piece, []))
            start = end
        return count

    @cached_property
    def _harmony_specials(self) -> list[str]:
        return list(self.harmony_core.special_tokens())

    @cached_property
    def harmony_core(self) -> Any:
        """openai-harmony's HARMONY_GPT_OSS encoding (its compiled core's object), loaded from
        this file: what every verdict and encoding goes through."""
        core = harmony_bindings()
        with _encodings_base(self.path):
            try:
                return core.load_harmony_encoding(_HARMONY_GPT_OSS)
            except Exception as exc:  # HarmonyError is a RuntimeError subclass in some versions
                raise VocabError(f"openai-harmony could not load {self.path}: {exc}") from None

    def ready_to_judge(self) -> Vocab:
        """This vocabulary with openai-harmony's encoding loaded, for a caller about to judge a
        stream (every verdict needs it): the replay before the verdict then takes its token
        bytes from that encoding too, and the parsed-ranks table is never loaded beside it."""
        self.harmony_core  # noqa: B018 - loading is the point
        return self

    @cached_property
    def harmony(self) -> Any:
        """openai-harmony's HarmonyEncoding (the Python package's class) over `harmony_core`:
        the package's API for rendering chats, with no second load of the encoding."""
        import openai_harmony

        return openai_harmony.HarmonyEncoding(self.harmony_core)

    def harmony_parse(
        self, tokens: Sequence[int], role: ParseRole, strict: bool, open_stream: bool = False
    ) -> HarmonyOutcome:
        """Run openai-harmony's StreamableParser token by token and note where it raises.

        `open_stream` leaves out `process_eos`: a stream that may go on is not at its end.
        """
        # openai-harmony's StreamableParser, without its Python wrapper (a call per token, and
        # pydantic messages): the compiled parser it wraps, fed the same arguments.
        core = harmony_bindings()
        parser_role = "assistant" if role == "assistant" else None
        try:
            parser = core.PyStreamableParser(self.harmony_core, parser_role, strict)
        except TypeError:  # openai-harmony < 0.0.5 has no `strict`
            if not strict:
                raise VocabError("the installed openai-harmony has no lenient mode") from None
            parser = core.PyStreamableParser(self.harmony_core, parser_role)
        process = parser.process
        index = 0
        try:
            for index, token in enumerate(tokens):  # noqa: B007 - index is read after a raise
                process(token)
            index = len(tokens)
            if not open_stream:
                parser.process_eos()
        except core.HarmonyError as exc:
            messages = tuple(_plain_message(m) for m in json.loads(parser.messages))
            return HarmonyOutcome(error=str(exc), raise_index=index, messages=messages)
        messages = tuple(_plain_message(m) for m in json.loads(parser.messages))
        return HarmonyOutcome(error=None, raise_index=None, messages=messages)

    def harmony_error(self, tokens: Sequence[int], role: ParseRole, strict: bool) -> str | None:
        """The error `parse_messages_from_completion_tokens` raises on the tokens, or None.

        One call into openai-harmony (no per-token Python loop), for callers that test many
        candidate streams and need only the verdict.
        """
        core = harmony_bindings()
        parser_role = "assistant" if role == "assistant" else None
        parse = self.harmony_core.parse_messages_from_completion_tokens
        try:
            try:
                parsed = parse(list(tokens), parser_role, strict)
            except TypeError:  # openai-harmony < 0.0.5 has no `strict`
                if not strict:
                    raise VocabError("the installed openai-harmony has no lenient mode") from None
                parsed = parse(list(tokens), parser_role)
            for message in json.loads(parsed):
                _plain_message(message)  # what openai-harmony's own reading of them checks
        except core.HarmonyError as exc:
            return str(exc)
        return None

    def render_for_completion(
        self, messages: Sequence[dict[str, Any]], auto_drop_analysis: bool = True
    ) -> list[int]:
        """openai-harmony's `render_conversation_for_completion` (next turn: assistant).

        `messages` are in openai-harmony's own JSON shape (`Message.to_dict`): role, name,
        content (a string or typed parts: text, system_content, developer_content), channel,
        recipient, content_type. The tokens end with `<|start|>assistant`, as a server's do.
        """
        import json

        import openai_harmony

        try:
            conversation = openai_harmony.Conversation.from_json(
                json.dumps({"messages": list(messages)})
            )
            config = openai_harmony.RenderConversationConfig(auto_drop_analysis=auto_drop_analysis)
            tokens = self.harmony.render_conversation_for_completion(
                conversation, openai_harmony.Role.ASSISTANT, config
            )
        except (openai_harmony.HarmonyError, ValueError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise InputError(f"openai-harmony cannot render this chat: {first}") from None
        return [int(t) for t in tokens]


_ROLES = frozenset({"user", "assistant", "system", "developer", "tool"})  # openai_harmony.Role
_CONTENT_TYPES = frozenset({"text", "system_content", "developer_content"})


def _plain_message(message: dict[str, Any]) -> dict[str, Any]:
    """A message as openai-harmony's parser writes it (JSON), as plain values: what the
    package's `Message.from_dict` reads of it, refused where that refuses it.

    `text` joins the text parts (system and developer contents have none); the parser writes
    a single text content as a plain string.
    """
    role = message["role"]
    if role not in _ROLES:
        raise ValueError(f"Unknown role: {role!r}")
    content = message["content"]
    parts = [{"type": "text", "text": content}] if isinstance(content, str) else content
    for part in parts:
        if part.get("type") not in _CONTENT_TYPES:
            raise ValueError(f"Unknown content variant: {part}")
    return {
        "role": role,
        "name": message.get("name"),
        "channel": message.get("channel"),
        "recipient": message.get("recipient"),
        "content_type": message.get("content_type"),
        "text": "".join(str(p["text"]) for p in parts if p.get("type") == "text"),
    }


_CACHE: dict[Path, Vocab] = {}


def load_vocab(explicit: Path | None = None) -> Vocab:
    """The Vocab for the file `locate_vocab` picks, verified once per process."""
    path = locate_vocab(explicit)
    if path not in _CACHE:
        _CACHE[path] = Vocab(path)
    return _CACHE[path]


def harmony_version() -> str:
    return package_version("openai-harmony")


def package_version(name: str) -> str:
    """The installed version of a distribution, or "unknown"."""
    from importlib import metadata  # ~20 ms: only JSON records and repro bundles name versions

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "unknown"
