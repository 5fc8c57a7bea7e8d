"""Turning a message found in a log into a LogError: its rule, header, expected and found."""

from __future__ import annotations

from harmony_doctor.faults import rules
from harmony_doctor.faults.catalogue import FORM, FORMS, Form, is_parser_kind, kind_of_error
from harmony_doctor.faults.classify import FaultContext, classify
from harmony_doctor.faults.rules import Rule
from harmony_doctor.faults.wording import Said, Wording
from harmony_doctor.faults.wording import lmstudio_found as lmstudio_found
from harmony_doctor.harmony.vocab import FIRST_SPECIAL, special_token_name
from harmony_doctor.logs.lines import MAX_MESSAGE_CHARS, MAX_RAW_CHARS, Line, clip
from harmony_doctor.logs.messages import SPECIAL_TEXT, MessageHit
from harmony_doctor.logs.process import ProcessState
from harmony_doctor.logs.recall import Recent
from harmony_doctor.logs.servers import version_label
from harmony_doctor.models import Kind, LogError


def describe(
    line: Line,
    hit: MessageHit,
    last_line: int,
    lead: Line | None,
    state: ProcessState,
    worded: Worded | None = None,
) -> LogError:
    """The record of the failure `hit` reports on `line`, its evidence taken from `state`.

    `last_line` is the last line the message spans; `lead` a prefix-only line just before it;
    `worded`: the caller's memory of the hits it worded lately (see `_worded`).
    """
    in_traceback = state.ends_traceback(line)
    since = (state.traceback_start or line.number) - 2  # its record line comes just before
    form = FORM[hit.name]
    kind = form.kind
    rule, expected, found, harmony = _worded(hit, form, Recent() if worded is None else worded)
    server = (
        form.server
        or line.evidence
        or (state.traceback_server if in_traceback else None)
        or (state.server if line.key or (in_traceback and state.server_line >= since) else None)
        or (lead.evidence if lead is not None else None)
    )  # else the form's guess, once every sighting was seen (logs/extract.py `_flush`)
    versions = _form_versions(hit, form)
    if in_traceback and state.versions is not None:
        both = state.versions & versions if versions is not None else state.versions
        versions = both or versions
    timestamp = line.timestamp
    if timestamp is None and in_traceback and state.timestamp_line >= since:
        timestamp = state.timestamp
    if timestamp is None and lead is not None:
        timestamp = lead.timestamp
    pid = line.pid if line.pid is not None else state.pid if line.key else None
    start = line.number
    if in_traceback and state.traceback_start is not None:
        start = min(start, max(state.traceback_start, state.episode_start))
    remainder = hit.remainder
    words = remainder.words if remainder is not None else ()
    unread = remainder.unread if remainder is not None else 0
    cut = remainder.cut if remainder is not None else ()
    truncated = remainder is not None and not remainder.closed
    return LogError(
        line=line.number,
        span=(start, last_line),
        kind=kind,
        code=rule.code,
        severity=rule.severity,
        message=hit.message,
        raw=clip(line.raw, MAX_RAW_CHARS),
        server=server,
        harmony_version=version_label(versions),
        timestamp=timestamp,
        pid=pid,
        token=hit.token,
        header_remainder=" ".join(words) if remainder is not None and words else None,
        header_words=words,
        remainder_truncated=truncated,
        reconstructed=reconstruct(words, truncated) if words and rule.code != "HD105" else None,
        context=hit.context if kind != "markup_leak" else None,
        expected=expected,
        found=found,
        words_unread=unread,
        words_cut=cut,
        harmony_error=harmony,
        role_word=hit.role_word,
        message_cut=hit.message_cut,
    )


# A hit's rule and what it expected and found, by hit: pure functions of the hit, and a failure
# that recurs is the same hit each time (logs/recall.py). Bounded: so many hits, each short.
Worded = Recent[MessageHit, tuple[Rule, str, str, bool]]


def _worded(hit: MessageHit, form: Form, known: Worded) -> tuple[Rule, str, str, bool]:
    """`hit`'s rule, what it expected and found (`_rule_for`, `_expected_found`) and whether
    its message is an openai-harmony parser error's, kept in `known` for the next time."""
    worded = known.get(hit)
    if worded is None:
        rule = _rule_for(hit, form)
        harmony = kind_of_error(hit.message) is not None
        worded = (rule, *_expected_found(form, hit, rule), harmony)
        known.keep(hit, worded, len(hit.message))
    return worded


def _form_versions(hit: MessageHit, form: Form) -> frozenset[int] | None:
    if form.versions is not None:
        return form.versions
    if hit.remainder is None:
        return None
    if hit.remainder.form == "list":
        return frozenset({1, 2, 3, 4})
    if hit.remainder.form == "some":
        return frozenset({5})
    return None


def _rule_for(hit: MessageHit, form: Form) -> Rule:
    if form.code is not None:
        return rules.RULES[form.code]
    parser_kind = form.kind
    if not is_parser_kind(parser_kind):
        raise AssertionError(f"form {form.name} reports a {parser_kind} without a code")
    leftover = " ".join(hit.remainder.words) if hit.remainder is not None else None
    return classify(
        FaultContext(kind=parser_kind, leftover=leftover, token=hit.token, role_word=hit.role_word)
    )


def reconstruct(words: tuple[str, ...], truncated: bool) -> str:
    """The header as the model most likely wrote it, the parts the log cannot show marked.

    openai-harmony cut out `<|channel|>NAME` and took the last one or two words as content
    type and recipient before it reported what was left.
    """
    body = " ".join(words)
    if truncated:
        return f"<|channel|>… {body} … (cut by the log)"
    return f"<|channel|>… {body} [1-2 words taken as recipient, content type]<|message|>"


def _expected_found(form: Form, hit: MessageHit, rule: Rule) -> tuple[str, str]:
    """What the failure expected and found, in its form's words (faults/wording.py)."""
    wording = form.wording or _KIND_WORDING.get(form.kind)
    if wording is None:  # pragma: no cover - every form found in a log has a wording
        return "", rule.title
    remainder = hit.remainder
    token = hit.token
    said = Said(
        code=rule.code,
        message=hit.message,
        words=remainder.words if remainder is not None else (),
        cut=remainder is not None and not remainder.closed,
        token=token,
        token_text=(
            ""
            if token is None
            else special_token_name(token)
            if token >= FIRST_SPECIAL
            else "an ordinary text token"
        ),
        role_word=hit.role_word,
        context=hit.context,
        markup=tuple(sorted(set(SPECIAL_TEXT.findall(hit.message)))),
    )
    return wording(said)


def _kind_wordings() -> dict[Kind, Wording]:
    """Per kind, the wording of its first specific form: what a generic form (faults/
    generic.py) without a wording of its own says."""
    wordings: dict[Kind, Wording] = {}
    for form in FORMS:
        if form.wording is not None and not form.generic:
            wordings.setdefault(form.kind, form.wording)
    return wordings


_KIND_WORDING = _kind_wordings()


def shown_markup(text: str, line: int) -> LogError:
    """Clean Harmony text a user was shown (a paste captions it as a reply): the server
    returned the output unparsed (HD205), though nothing in it is malformed."""
    rule = rules.RULES["HD205"]
    shown = text.strip()
    markup = sorted(set(SPECIAL_TEXT.findall(shown)))
    return unparsed(
        rule,
        (line, line + shown.count("\n")),
        shown,
        shown.split("\n", 1)[0],
        "plain text in the returned message",
        f"well-formed Harmony shown as text ({', '.join(markup)}): nothing failed to "
        "parse, the server did not parse it",
    )


def unparsed(
    rule: Rule,
    span: tuple[int, int],
    shown: str,
    raw: str,
    expected: str,
    found: str,
    prefix: Line | None = None,
) -> LogError:
    """A failure with no parse evidence (no token, no header): Harmony a server showed or
    returned as text. Its server, time and pid come from its line's prefix, when it has one."""
    return LogError(
        line=span[0],
        span=span,
        kind=rule.kind,
        code=rule.code,
        severity=rule.severity,
        message=(message := clip(shown, MAX_MESSAGE_CHARS)),
        raw=clip(raw, MAX_RAW_CHARS),
        server=prefix.evidence if prefix is not None else None,
        harmony_version=None,
        timestamp=prefix.timestamp if prefix is not None else None,
        pid=prefix.pid if prefix is not None else None,
        token=None,
        header_remainder=None,
        header_words=(),
        remainder_truncated=False,
        reconstructed=None,
        context=None,
        expected=expected,
        found=found,
        harmony_error=kind_of_error(message) is not None,
    )
