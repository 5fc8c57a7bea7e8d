"""Harmony text whose special tokens were stripped (skip_special_tokens): found, never replayed."""

from __future__ import annotations

from harmony_doctor.faults import rules
from harmony_doctor.lazy_regex import Pattern
from harmony_doctor.logs.describe import unparsed
from harmony_doctor.logs.lines import anatomize
from harmony_doctor.models import LogError

# What stripping leaves: a channel name glued to the role before it (`assistantfinal`), or a
# text that opens with a channel name glued to a capitalised word (`analysisGreet back.`), or
# a tool call's header glued to its arguments: `commentary to=functions.get_weather json{...`
# (<|constrain|> gone), `assistant to=python code{...`, `assistantcode{...` (a content type
# glued to the role). Either way no `<|` is left in the text. The word alone, quoted as a name
# (`the literal `assistantfinal``) or inside a regular expression (`assistantfinal(?P<x>.*)`),
# is no output.
_GLUED = Pattern(
    r"assistant(?:analysis|commentary|final)(?=[^\s`'\"()\\|?])"
    r"|(?:^|output:\s*|['\"])(?:analysis|commentary)(?=[A-Z])"
    r"|assistantcommentary to=\w"
    r"|(?:^|output:\s*|['\"]|assistant|\s)(?:commentary|analysis)?\s*to=(?:functions|python|browser)"
    r"[\w.-]*\s*(?:json|code)\s*[{\[]"
    r"|assistant(?:json|code)\s*[{\[]"
    # a header with its role, recipient, channel and content type glued or spaced, ending where
    # the arguments begin or at the line's end: `assistant to=functions.f commentary json`,
    # `assistantanalysis to=browser.open code`
    r"|assistant(?:analysis|commentary|final)?\s*to=(?:functions|python|browser)[\w.-]*"
    r"\s*(?:(?:analysis|commentary)\s*)?(?:json|code)\s*(?:[{\[]|$)"
)


def find_stripped(text: str) -> LogError | None:
    """The first line holding Harmony output with its special tokens stripped, or None."""
    for number, raw in enumerate(text.split("\n"), start=1):
        if "<|" in raw:
            continue  # markup left: not stripped text
        match = _GLUED.search(raw)
        if match is None:
            continue
        shown = raw.strip()
        return unparsed(
            rules.RULES["HD206"],
            (number, number),
            shown,
            raw,
            "Harmony text with its special tokens, or the token ids",
            f"{match.group(0).strip(chr(39) + chr(34))!r}: special tokens removed "
            "(skip_special_tokens); the message boundaries are lost and it cannot be replayed",
            anatomize(number, raw),
        )
    return None
