"""A description with no evidence: what it describes, in the catalogue's terms, and what to
paste for a diagnosis (`explain` exits 0 on it, as on a clean log, but says so)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from harmony_doctor import specials
from harmony_doctor.lazy_regex import Pattern


@dataclass(frozen=True)
class Description:
    """What a text describes (`what`), the rule that covers it, and what to paste instead."""

    what: str
    code: str
    paste: str


_REASONING: Final = r"(?:reasoning|analysis|thinking|chain[- ]of[- ]thought|CoT|thoughts?)"
_CONTENT: Final = (
    r"(?:content|the\s+(?:answer|response|reply|output|message)|final\s+answer"
    r"|(?:response|reply|message)\s+(?:body|text|field))"
)
_SYMPTOMS: Final[tuple[tuple[Pattern[str], Description], ...]] = (
    (
        Pattern(
            rf"{_REASONING}\W+(?:\w+\W+){{0,9}}?(?:ends?\s+up|appears?|shows?\s+up|leaks?|is\s+"
            rf"returned|gets?\s+(?:mixed|returned|put)|comes?\s+back|lands?|(?:is\s+)?embedded"
            rf"|(?:is\s+)?mixed)\s+(?:\w+\s+){{0,3}}"
            rf"(?:in|into|inside|within|as\s+part\s+of)\s+(?:\w+\s+){{0,2}}\W?{_CONTENT}"
            rf"|reasoning_content\W+(?:\w+\W+){{0,4}}?(?:is|was|are|stays|comes\s+back)\s+"
            rf"(?:always\s+)?(?:null|empty|None|missing)"
            rf"|(?:response|content|answer|output|reply)\W+(?:\w+\W+){{0,8}}?(?:includes?|contains?"
            rf"|mix(?:es)?|has)\W+(?:\w+\W+){{0,12}}?{_REASONING}"
            r"(?!\W*(?:effort|parser|field|mode|level|budget|tokens?\b))",
            re.I,
        ),
        Description(
            "reasoning returned in content",
            "HD205",
            "the response body (JSON) or the streamed chunks as the client got them, or the "
            "completion's token ids",
        ),
    ),
    (
        Pattern(
            r"(?:response|content|output|reply|answer)\W+(?:\w+\W+){0,8}?(?:includes?|contains?|"
            r"has|shows?)\W+(?:\w+\W+){0,6}?"
            + specials.ANY
            + r"|(?:"
            + specials.ANY
            + r"|special\s+tokens?|"
            r"(?:harmony|raw|channel)\s+(?:markup|tokens?|tags?))\W+(?:\w+\W+){0,6}?"
            r"(?:in|inside|into)\s+(?:\w+\s+){0,2}\W?(?:content|response|output|"
            r"tool(?:[ _-]call)?\s+names?|"
            r"function\s+names?|arguments"
            # where an app shows the reply: `directly in the chat bubble`, `in the WebUI`
            r"|(?:chat\s+)?bubbles?|chat\s+(?:window|ui|view)|(?:web\s*)?ui\b)"
            # what came back shown as the markup itself: `appears inline in the chat as raw
            # channel markup`, `is displayed as raw harmony tags`
            r"|(?:appears?|shows?(?:\s+up)?|(?:is|are|gets?)\s+(?:displayed|rendered|shown|printed)"
            r"|comes?\s+(?:back|through)|returned)\s+(?:[\w'\u2019-]+\s+){0,6}?as\s+"
            r"(?:[\w-]+\s+){0,2}?(?:harmony|raw|channel|special)\s+(?:markup|tokens?|tags?|text)",
            re.I,
        ),
        Description(
            "Harmony markup returned to the client",
            "HD205",
            "the response body (JSON) or the streamed chunks as the client got them",
        ),
    ),
    (
        Pattern(
            r"tool[ _-]?call\w*\W+(?:\w+\W+){0,6}?(?:arguments?\s+)?(?:is|are|were|was)?\s*"
            r"(?:not\s+valid\s+JSON|invalid\s+JSON|malformed|truncated|cut\s+off)"
            # words of a sentence between (never a log's `at pos 12: </tool_call>`, another
            # model family's markup after a parser's position)
            r"|(?:fail\w*\s+to|could\s*n[o']t|cannot|unable\s+to)\s+parse\s+"
            r"(?:[\w'\u2019-]+\s+){0,4}?\W?tool[ _-]?calls?",
            re.I,
        ),
        Description(
            "a tool call the server could not read",
            "HD180",
            "the server's error or log lines around the failure, or the completion's token ids",
        ),
    ),
)
# A JSON document or an SSE stream (`[Bug]: ...`, an issue's tagged title, is words).
_DOCUMENT: Final = Pattern(r"""\s*(?:\{|data:|\[\s*(?:[\[{"\d\]-]|$))""")
_GPT_OSS: Final = Pattern(r"gpt-oss|gpt_oss|\bharmony\b|openai/gpt", re.I)


def described(text: str) -> Description | None:
    """What a text with no evidence of its own describes, when it names a Harmony symptom
    (a JSON document is no description: its fields say what they hold)."""
    if _DOCUMENT.match(text):
        return None
    for pattern, description in _SYMPTOMS:
        if pattern.search(text):
            return description
    return None


def mentions_model(text: str) -> bool:
    """Whether a description names gpt-oss or Harmony at all."""
    return _GPT_OSS.search(text) is not None


_PROMPT_WORDS: Final = Pattern(r"\bprompts?\b|\brenders?\b|\brendered\b|\btemplate\b", re.I)


def calls_it_a_prompt(text: str) -> bool:
    """Whether the words around a piece call it a prompt (rendered, a template's output)."""
    return _PROMPT_WORDS.search(text) is not None


_MARKUP: Final = Pattern(specials.ANY)


def said_with_markup(text: str) -> tuple[int, str, Description] | None:
    """A sentence that says Harmony markup came back and quotes the markup itself: evidence,
    not only a description. Its line, the sentence and what it says."""
    if _DOCUMENT.match(text):
        return None
    for number, line in enumerate(text.split("\n"), start=1):
        if "<|" not in line or _MARKUP.search(line) is None:
            continue
        for sentence in re.split(r"(?<=[.!?])\s+", line):
            said = described(sentence)
            if said is not None and said.code == "HD205" and _MARKUP.search(sentence):
                return number, sentence.strip(), said
    return None


# Words that call a block what a client got back, and words that call it documentation or
# what the model itself generated (its raw tokens, which a server is meant to parse).
_RETURNED: Final = Pattern(
    r"\b(?:returned|returns?|getting|got|receiv\w*|answer|reply|response"
    # what a person saw an app show: `The app shows this in the bubble`, `Observed:`
    r"|observed|shows|shown|displays?|displayed|prints|printed|see|seeing|bubble"
    r"|(?:api|server|client|endpoint|request)\W+(?:\w+\W+){0,2}?output"
    # an application's output (`RooCode's output`), not the model's own (its raw tokens)
    r"|(?!model|gpt|llm|oss)[a-z]\w*'s\s+output)\b",
    re.I,
)
# What was wanted set against what came back: the words after it say what the block is.
_CONTRAST: Final = Pattern(
    r"\b(?:but|instead)\s+(?:\w+\s+){0,2}?(?:got|get|getting|received|receive|see|saw)\b", re.I
)
_DOCUMENTED: Final = Pattern(
    r"\b(?:emits?|spec\w*|format|example|template|prompt|render\w*|should|expected"
    r"|correct|valid|produc\w*|generat\w*|typical\w*|sample|illustrat\w*|docs?"
    r"|documentation)\b",
    re.I,
)


def calls_it_documented(words: str) -> bool:
    """Whether the words above a block call it what the format is or should be (`The correct
    format looks like this:`, `The model emits`), and nothing calls it what came back."""
    return (
        _DOCUMENTED.search(words) is not None
        and _RETURNED.search(words) is None
        and _CONTRAST.search(words) is None
    )


def calls_it_returned(words: str) -> bool:
    """Whether the words above a block call it what came back (`This is what we're getting`,
    `API output`, `Expected X, but got replies like`), not what the format is or should be
    (`The model emits`, `spec`)."""
    contrast = _CONTRAST.search(words)
    if contrast is not None:
        return True  # what was expected (`Expected normal output, but got`) is not the block
    return _RETURNED.search(words) is not None and _DOCUMENTED.search(words) is None
