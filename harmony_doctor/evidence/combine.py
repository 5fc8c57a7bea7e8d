"""The evidence of one paste put together for `explain`: what each reader found, once.

Each reader is loaded where it is first asked: a traceback's failures only need their server
named (context.py); markup, ids, frames and prose are read in other texts."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Final

from harmony_doctor.evidence import context
from harmony_doctor.harmony.vocab import START
from harmony_doctor.inputs.paste import Piece
from harmony_doctor.lazy_regex import Pattern

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from harmony_doctor.evidence.prose import Description
    from harmony_doctor.harmony.vocab import Vocab
    from harmony_doctor.models import LogError


def refined(errors: tuple[LogError, ...], text: str) -> tuple[LogError, ...]:
    """The failures with what the whole paste says of them: the server all its evidence names,
    and one finding per failure, counted as scan counts them."""
    return context.one_per_failure(context.attribute(errors, text))


def not_a_stream(text: str) -> bool:
    """Markup in `text` that is no Harmony output: a listing of the special tokens, or markup
    its sentences quote."""
    from harmony_doctor.evidence import markup

    return markup.lists_tokens(text) or markup.quoted_in_prose(text)


def named_in_prose(piece: str) -> bool:
    """Markup that is a sentence's, not output: a piece that is prose around a token."""
    from harmony_doctor.evidence import markup

    return markup.named_in_a_sentence(piece)


def leaked(body: str) -> LogError | None:
    """A JSON document's returned field holding Harmony text stripped of its special tokens."""
    from harmony_doctor.evidence import markup

    return markup.stripped_in_json(body)


def quoted_leak(text: str) -> LogError | None:
    """A tool name or recipient with Harmony markup glued to it, quoted in a paste's text."""
    from harmony_doctor.evidence import markup

    return markup.glued_name(text)


def cut_traceback(text: str) -> LogError | None:
    """A traceback cut before its exception line whose frames show where it broke."""
    from harmony_doctor.evidence import frames

    return frames.cut_render(text)


def id_pieces(text: str) -> Iterator[Piece]:
    """The runs of token ids a paste prints under any key or none, as pieces to replay (a
    prompt's as messages left open, a completion's as the fragment it is), as they are read."""
    from harmony_doctor.evidence import ids

    for run in ids.id_runs(text):
        yield Piece("ids", run.text, run.line, elided=run.elided or run.prompt)


def prompt_parsed(
    found: tuple[LogError, ...], text: str, vocab: Callable[[], Vocab]
) -> tuple[LogError, ...]:
    """The failures, a stream that ended in a header (HD141) called what the paste shows it
    was: a rendered prompt handed to the completion parser (HD143), when its code or its ids
    say so."""
    if not any(e.code == _ENDED_IN_HEADER for e in found) or not (
        "render_conversation_for_completion" in text or _OPENS_WITH_START.search(text)
    ):
        return found  # no rendering code, no id run opening with <|start|>: no reader to load
    from dataclasses import replace

    from harmony_doctor.evidence import ids

    def callers() -> frozenset[int]:  # the vocabulary, loaded only for ids to judge
        encode = vocab().encode
        words = ("system", "developer", "user")
        return frozenset(tokens[0] for tokens in map(encode, words) if len(tokens) == 1)

    if not ids.parses_its_prompt(text, callers, START):
        return found
    return tuple(replace(e, code=_PROMPT_FED) if e.code == _ENDED_IN_HEADER else e for e in found)


_ENDED_IN_HEADER: Final = "HD141"
# An id run that opens with <|start|> (`[200006, 17360, ...`, `tokens: 200006 17360`).
_OPENS_WITH_START: Final = Pattern(rf"(?:[\[(:=]|^)\s*{START}(?:\s*,\s*|\s+)\d", re.M)
_PROMPT_FED: Final = "HD143"


def described_leak(text: str, pieces: tuple[Piece, ...]) -> LogError | None:
    """Harmony markup a paste shows while its words say the reasoning came back in content, or
    the words right above it, or a label on its line, call it what came back: the markup is
    the leak they describe (HD205), however well-formed it is."""
    from harmony_doctor.evidence import markup, prose

    shown = [p for p in pieces if markup.opens_with_markup(p.text)]
    if not shown:
        return None
    said = prose.described(text)
    piece = next((p for p in pieces if p.labelled), None)  # `output : <|channel|>...`
    if piece is None and said is not None and said.code == "HD205":
        piece = shown[0]
    if piece is None:  # no description: the words right above a block call it what came back
        piece = next(
            (
                p
                for p in shown
                if prose.calls_it_returned(_words_above(text, p.line))
                and not markup.rendered_prompt(p.text)
            ),
            None,
        )
    if piece is None:
        return None
    from harmony_doctor.logs.describe import shown_markup

    return shown_markup(piece.text, piece.line)


def documented_above(text: str, line: int) -> bool:
    """Whether the words right above line `line` call what follows the format, not output."""
    from harmony_doctor.evidence import prose

    return prose.calls_it_documented(_words_above(text, line))


def _words_above(text: str, line: int, reach: int = 2) -> str:
    """The last `reach` lines of words above line `line` of `text` (no fences, no blanks)."""
    lines = text.split("\n")[max(0, line - 8) : max(0, line - 1)]
    words = [x for x in lines if x.strip() and not x.lstrip().startswith(("```", "~~~"))]
    return "\n".join(words[-reach:])


def shows_prompt(text: str, piece: str) -> bool:
    """Whether a paste shows `piece` as a rendered prompt: its words call it one, and it opens
    with a system or developer message and ends where the model's reply would begin."""
    from harmony_doctor.evidence import markup, prose

    return markup.rendered_prompt(piece) and prose.calls_it_a_prompt(text.replace(piece, " "))


def said_leak(text: str) -> LogError | None:
    """A sentence that says the reply held Harmony markup and quotes it (HD205)."""
    from harmony_doctor.evidence import prose

    said = prose.said_with_markup(text)
    if said is None:
        return None
    from harmony_doctor.faults import rules
    from harmony_doctor.logs.describe import unparsed

    line, sentence, what = said
    return unparsed(
        rules.RULES[what.code],
        (line, line),
        sentence,
        sentence,
        "plain text in the returned message",
        "Harmony markup the reply held, as the text quotes it: the server returned the output "
        "unparsed, or parsed it wrongly",
    )


def description(text: str) -> Description | None:
    """What a text with no evidence describes, if it names a Harmony symptom."""
    from harmony_doctor.evidence import prose

    return prose.described(text)
