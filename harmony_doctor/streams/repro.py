"""Repro bundles: shrink a failing stream by delta debugging, then write what maintainers ask for.

A candidate "fails the same way" when openai-harmony (the installed one, same role and mode)
raises an error of the same kind whose message has the same shape: the text with its variable
parts (quoted header words, an unknown role) masked, token ids kept. The bundle holds the minimal
token list, a standalone `repro.py` that needs only openai-harmony and a local vocabulary, the
versions involved, and a ready-to-paste ISSUE.md.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

from harmony_doctor.choices import ParseRole
from harmony_doctor.errors import InputError, OutputError
from harmony_doctor.faults.catalogue import kind_of_error
from harmony_doctor.harmony.vocab import VOCAB_FILENAME, Vocab, harmony_version, package_version
from harmony_doctor.models import Diagnosis, Shrink, TokenInput
from harmony_doctor.streams.diagnose import describe_token, diagnose
from harmony_doctor.version import __version__

DEFAULT_BUDGET = 20_000
_QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_UNKNOWN_ROLE = re.compile(r"(Unknown role:).*", re.S)


def failure_shape(error: str) -> str:
    """The error message with its variable parts masked: quoted words, the unknown role."""
    shape = _QUOTED.sub('"…"', error)
    return _UNKNOWN_ROLE.sub(r"\1 …", shape)


def failure_kind(error: str) -> str:
    return kind_of_error(error) or "unknown"


def shrink(
    tokens: Sequence[int],
    vocab: Vocab,
    role: ParseRole,
    strict: bool = True,
    budget: int = DEFAULT_BUDGET,
) -> Shrink:
    """The smallest sub-stream (ddmin, 1-minimal within budget) that fails the same way."""
    original_error = vocab.harmony_error(tokens, role, strict)
    if original_error is None:
        raise InputError("openai-harmony parses this stream without error; nothing to reproduce")
    kind, shape = failure_kind(original_error), failure_shape(original_error)
    seen: dict[tuple[int, ...], bool] = {}
    errors: dict[tuple[int, ...], str] = {}

    def fails(candidate: Sequence[int]) -> bool:
        key = tuple(candidate)
        if key not in seen:
            error = vocab.harmony_error(key, role, strict)
            seen[key] = error is not None and (failure_kind(error), failure_shape(error)) == (
                kind,
                shape,
            )
            if error is not None:
                errors[key] = error
        return seen[key]

    current = list(tokens)
    # Tokens after the one that raised cannot matter: try cutting them first, in one step.
    raise_index = vocab.harmony_parse(tokens, role, strict).raise_index
    if raise_index is not None and raise_index + 1 < len(current):
        head = current[: raise_index + 1]
        if fails(head):
            current = head
    current, exhausted = ddmin(current, fails, lambda: len(seen) >= budget)
    minimal = tuple(current)
    if minimal not in errors:
        fails(minimal)
    return Shrink(
        original=tuple(tokens),
        minimal=minimal,
        role=role,
        strict=strict,
        original_error=original_error,
        minimal_error=errors.get(minimal, original_error),
        kind=kind,
        shape=shape,
        tests=len(seen),
        exhausted=exhausted,
    )


def ddmin(
    items: list[int], fails: Callable[[Sequence[int]], bool], out_of_budget: Callable[[], bool]
) -> tuple[list[int], bool]:
    """Zeller's delta debugging: a 1-minimal failing subsequence of `items` (which fails)."""
    granularity = 2
    while len(items) >= 2:
        size = -(-len(items) // granularity)
        chunks = [items[i : i + size] for i in range(0, len(items), size)]
        for index, chunk in enumerate(chunks):
            if out_of_budget():
                return items, True
            if fails(chunk):
                items, granularity = chunk, 2
                break
            complement = [t for k, c in enumerate(chunks) if k != index for t in c]
            if len(chunks) > 2 and fails(complement):
                items, granularity = complement, max(granularity - 1, 2)
                break
        else:
            if granularity >= len(items):
                break
            granularity = min(granularity * 2, len(items))
    if len(items) == 1 and fails([]):
        items = []
    return items, False


# --- the bundle ------------------------------------------------------------------------------


def versions_record(vocab: Vocab) -> dict[str, str]:
    return {
        "openai-harmony": harmony_version(),
        "tiktoken": package_version("tiktoken"),
        "harmony-doctor": __version__,
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
        "vocab": VOCAB_FILENAME,
    }


BUNDLE_FILES = ("tokens.json", "repro.py", "versions.json", "ISSUE.md")


def bundle_files(out_dir: Path, copy_vocab: bool = True) -> list[Path]:
    """Every file `write_bundle` writes into `out_dir` (the vocabulary copy first, when made)."""
    vocab = [out_dir / "vocab" / VOCAB_FILENAME] if copy_vocab else []
    return vocab + [out_dir / name for name in BUNDLE_FILES]


def existing_bundle_files(
    out_dir: Path,
    copy_vocab: bool = True,
    overwrite: bool = False,
    inputs: Sequence[Path] = (),
) -> list[Path]:
    """The bundle's files already in `out_dir` that writing it would replace (a dangling link
    counts: writing would follow it). With `overwrite`, only those it must not replace even
    then: one of `inputs` (what the run reads), or a file this tool did not write (`_ours`)."""
    there = [p for p in bundle_files(out_dir, copy_vocab) if os.path.lexists(p)]
    if not overwrite:
        return there
    return [p for p in there if _is_any(p, inputs) or not _ours(p)]


def _is_any(path: Path, inputs: Sequence[Path]) -> bool:
    """Whether `path` is one of `inputs` (the same file, by device and inode)."""
    for given in inputs:
        try:
            if os.path.samefile(path, given):
                return True
        except OSError:
            continue
    return False


_OURS_LIMIT = 1 << 22  # a bundle file is small: a larger one is not ours, and is not read
_VOCAB_LINE = re.compile(rb"[A-Za-z0-9+/=]+ [0-9]+\r?\n")


def _ours(path: Path) -> bool:
    """Whether `path` holds what `write_bundle` writes under its name (read by content: a
    bundle file a user replaced, or a file of theirs that has the name, is theirs)."""
    try:
        if not path.is_file() or path.stat().st_size > _OURS_LIMIT:
            return False
        data = path.read_bytes()
    except OSError:
        return False
    if path.name == VOCAB_FILENAME:
        return _VOCAB_LINE.match(data) is not None
    text = data.decode("utf-8", errors="replace")
    if path.name in ("tokens.json", "versions.json"):
        try:
            value = json.loads(text)
        except ValueError:
            return False
        if path.name == "versions.json":
            return isinstance(value, dict) and "harmony-doctor" in value
        return isinstance(value, list) and all(type(t) is int for t in value)
    marks = {"repro.py": "Written by harmony-doctor ", "ISSUE.md": "_Generated by harmony-doctor "}
    return marks.get(path.name, "\0") in text


def check_bundle_folder(
    out_dir: Path, copy_vocab: bool, overwrite: bool, inputs: Sequence[Path]
) -> None:
    """OutputError naming the files in the way when the bundle may not be written into
    `out_dir` (`existing_bundle_files`)."""
    refused = existing_bundle_files(out_dir, copy_vocab, overwrite, inputs)
    if not refused:
        return
    names = ", ".join(str(p.relative_to(out_dir)) for p in refused)
    if overwrite:
        why = "--force replaces only a bundle this tool wrote, never the input or another file"
        raise OutputError(f"cannot write the bundle to {out_dir}: {names} there ({why})")
    raise OutputError(
        f"cannot write the bundle to {out_dir}: {names} already there (--force overwrites)"
    )


def write_bundle(
    result: Shrink,
    out_dir: Path,
    vocab: Vocab,
    source: str,
    inp: TokenInput,
    copy_vocab: bool = True,
    overwrite: bool = False,
    *,
    shown: Callable[[str], str],
    inputs: Sequence[Path] = (),
) -> list[Path]:
    """Write tokens.json, repro.py, versions.json, ISSUE.md (and vocab/) into `out_dir`; an
    OutputError, and nothing written, when some are there already and `overwrite` is off, or
    when one is among `inputs` or is not ours (`existing_bundle_files`). ISSUE.md passes
    through `shown` (the one escaper's `visible`: control and bidi characters as escapes)."""
    check_bundle_folder(out_dir, copy_vocab, overwrite, [*inputs, vocab.path])
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        vocab_dir = out_dir / "vocab" if copy_vocab else vocab.path.parent
        written: list[Path] = []
        if copy_vocab:
            vocab_dir.mkdir(exist_ok=True)
            target = vocab_dir / VOCAB_FILENAME
            shutil.copyfile(vocab.path, target)
            written.append(target)
        elif vocab.path.name != VOCAB_FILENAME:
            raise InputError(
                f"--no-copy-vocab needs a vocabulary file named {VOCAB_FILENAME}, not {vocab.path}"
            )
        minimal_input = TokenInput(tokens=result.minimal, detected="tokens", format="json-array")
        minimal_diagnosis = diagnose(minimal_input, vocab, result.role, result.strict)
        texts = {
            "tokens.json": json.dumps(list(result.minimal)) + "\n",
            "repro.py": repro_script(result, vocab_dir if not copy_vocab else None),
            "versions.json": json.dumps(versions_record(vocab), indent=2) + "\n",
            "ISSUE.md": shown(issue_markdown(result, minimal_diagnosis, vocab, source, inp)),
        }
        for name in BUNDLE_FILES:
            path = out_dir / name
            path.write_text(texts[name], encoding="utf-8")
            written.append(path)
    except OSError as exc:
        raise InputError(f"cannot write the bundle to {out_dir}: {exc.strerror or exc}") from None
    return written


_VOCAB_LOOKUP = """

def _vocab_dir() -> Path:
    if os.environ.get("TIKTOKEN_ENCODINGS_BASE"):
        return Path(os.environ["TIKTOKEN_ENCODINGS_BASE"])
    try:
        from importlib.resources import files

        return Path(str(files("harmony_doctor") / "data"))
    except ModuleNotFoundError:
        sys.exit("repro.py: set TIKTOKEN_ENCODINGS_BASE to a folder holding {name}")

"""


def repro_script(result: Shrink, vocab_dir: Path | None) -> str:
    """A standalone script that feeds the minimal tokens to openai-harmony, as servers do."""
    # No absolute path of this machine goes into the bundle: the copy beside the script, or
    # $TIKTOKEN_ENCODINGS_BASE, or the copy inside an installed harmony-doctor.
    folder = 'Path(__file__).resolve().parent / "vocab"' if vocab_dir is None else "_vocab_dir()"
    lookup = "" if vocab_dir is None else _VOCAB_LOOKUP.format(name=VOCAB_FILENAME)
    role = "Role.ASSISTANT" if result.role == "assistant" else "None"
    strict_arg = "" if result.strict else ", strict=False"
    return f'''"""Reproduces an openai-harmony HarmonyError with openai-harmony alone.

Written by harmony-doctor {__version__} (openai-harmony {harmony_version()} at the time).
Run `python repro.py`: it raises HarmonyError while the bug is there and exits 0 once the
stream parses. It never downloads anything: openai-harmony reads o200k_base.tiktoken from
VOCAB_DIR through TIKTOKEN_ENCODINGS_BASE (edit VOCAB_DIR to use another copy).
"""

import os
import sys
from pathlib import Path
{lookup}
VOCAB_DIR = {folder}
if not (VOCAB_DIR / "{VOCAB_FILENAME}").is_file():
    sys.exit(f"repro.py: {{VOCAB_DIR / '{VOCAB_FILENAME}'}} is missing; refusing to download it")
os.environ["TIKTOKEN_ENCODINGS_BASE"] = str(VOCAB_DIR)

from openai_harmony import (  # noqa: E402
    HarmonyEncodingName,
    Role,
    StreamableParser,
    load_harmony_encoding,
)

TOKENS = {json.dumps(list(result.minimal))}
# What openai-harmony {harmony_version()} raised on these tokens:
EXPECTED_ERROR = {result.minimal_error!r}

encoding = load_harmony_encoding(HarmonyEncodingName.HARMONY_GPT_OSS)
parser = StreamableParser(encoding, {role}{strict_arg})
for token in TOKENS:  # token by token, as vLLM and SGLang feed a completion
    parser.process(token)
parser.process_eos()
print(f"not reproduced: parsed {{len(parser.messages)}} message(s) without error")
'''


def _fence(text: str, info: str = "") -> str:
    """A fenced block that the text itself cannot close."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{info}\n{text}\n{ticks}"


def _inline(text: str) -> str:
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def issue_markdown(result: Shrink, d: Diagnosis, vocab: Vocab, source: str, inp: TokenInput) -> str:
    """The ready-to-paste report: what fails, the tokens, where it went wrong, expected/actual."""
    tokens = result.minimal
    finding = next((f for f in d.findings if f.severity == "error"), None)
    mode = "strict" if result.strict else "strict=False"
    role = "Role.ASSISTANT" if result.role == "assistant" else "no role"
    lines = [
        f"# openai-harmony {harmony_version()}: {_inline(result.shape)}",
        "",
        f"`StreamableParser` ({role}, {mode}) raises `HarmonyError` on this {len(tokens)}-token "
        f"stream. harmony-doctor shrank it from {len(result.original)} tokens "
        f"({_source_line(source, inp)}) by delta debugging; it fails with the same kind of error "
        f"({result.kind}) and the same message shape.",
        "",
        "## Reproduce",
        "",
        "`python repro.py` (needs only `openai-harmony`; it reads `o200k_base.tiktoken` from "
        "`./vocab` through `TIKTOKEN_ENCODINGS_BASE` and never downloads). `tokens.json` holds "
        "the same token ids.",
        "",
        "## Actual",
        "",
        _fence(f"openai_harmony.HarmonyError: {result.minimal_error}"),
        "",
    ]
    if d.harmony_raise_index is not None:
        lines.append(
            f"Raised while processing {describe_token(tokens, d.harmony_raise_index, vocab)}."
        )
        lines.append("")
    if result.original_error != result.minimal_error:
        lines += ["Original error, on the full stream:", "", _fence(result.original_error), ""]
    lines += ["## Expected", ""]
    if finding is not None:
        lines.append(f"{finding.title}. At this point the format expects {finding.expected}.")
        if finding.origin_index is not None:
            lines.append(
                f"The stream left the format at "
                f"{describe_token(tokens, finding.origin_index, vocab)}"
                + (
                    f", {finding.raise_index - finding.origin_index} token(s) before the error"
                    if finding.raise_index is not None
                    and finding.origin_index < finding.raise_index
                    else ""
                )
                + "."
            )
        lines += ["", f"Likely cause: {finding.cause}", "", f"Workaround: {finding.fix}"]
    else:
        lines.append("The stream should parse, or fail with an error that names the token.")
    lenient = "parses it" if d.lenient_error is None else f"raises {_inline(d.lenient_error)}"
    lines += ["", f"With `strict=False` openai-harmony {lenient}.", ""]
    lines += [
        "## Tokens",
        "",
        "Decoded, special tokens written as `<|name|>`:",
        "",
        _fence(vocab.decode(tokens), "text"),
        "",
        "| # | id | token |",
        "|---:|---:|---|",
    ]
    for index, token in enumerate(tokens):
        text = json.dumps(vocab.decode([token]), ensure_ascii=False).replace("|", "\\|")
        mark = " ←" if finding is not None and index == finding.origin_index else ""
        lines.append(f"| {index} | {token} | {_inline(text)}{mark} |")
    original = vocab.decode(result.original)
    lines += [
        "",
        f"<details><summary>Original stream ({len(result.original)} tokens)</summary>",
        "",
        _fence(original, "text"),
        "",
        "</details>",
    ]
    lines += ["", "## Versions", ""]
    lines += [f"- {name}: {value}" for name, value in versions_record(vocab).items()]
    lines += ["", f"_Generated by harmony-doctor {__version__}._", ""]
    return "\n".join(lines)


def _source_line(source: str, inp: TokenInput) -> str:
    # The file's name only: where it sits on the reporter's machine is nobody's business.
    bits = [Path(source).name if source != "<stdin>" else source, inp.format]
    if inp.request_id:
        bits.append(f"request {inp.request_id}")
    if inp.finish_reason:
        bits.append(f"finish_reason {inp.finish_reason}")
    return ", ".join(bits)
