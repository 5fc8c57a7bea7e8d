"""Turning a message found in a log into a LogError: its rule, header, expected and found."""

from __future__ import annotations

import re

from harmony_doctor.faults import rules
from harmony_doctor.faults.catalogue import FORM, Form, is_parser_kind
from harmony_doctor.faults.classify import HEADER_SHAPE, FaultContext, classify
from harmony_doctor.faults.rules import Rule
from harmony_doctor.harmony.vocab import FIRST_SPECIAL, special_token_name
from harmony_doctor.logs.lines import MAX_MESSAGE_CHARS, MAX_RAW_CHARS, Line, clip
from harmony_doctor.logs.messages import SPECIAL_TEXT, MessageHit
from harmony_doctor.logs.process import ProcessState
from harmony_doctor.logs.servers import version_label
from harmony_doctor.models import Kind, LogError

# A header remainder is held as its first and last words: a line of a million leftover words
# (ten such lines took 2.7 GB in `explain`) is read in this window, the words between counted.
HEAD_WORDS = 192
TAIL_WORDS = 64


def bounded_words(words: tuple[str, ...]) -> tuple[tuple[str, ...], int]:
    """The words a LogError holds (a bounded head and tail) and how many between it leaves out."""
    if len(words) <= HEAD_WORDS + TAIL_WORDS:
        return words, 0
    return (*words[:HEAD_WORDS], *words[-TAIL_WORDS:]), len(words) - HEAD_WORDS - TAIL_WORDS


def describe(
    line: Line, hit: MessageHit, last_line: int, lead: Line | None, state: ProcessState
) -> LogError:
    """The record of the failure `hit` reports on `line`, its evidence taken from `state`.

    `last_line` is the last line the message spans; `lead` a prefix-only line just before it.
    """
    in_traceback = state.ends_traceback(line)
    since = (state.traceback_start or line.number) - 2  # its record line comes just before
    form = FORM[hit.name]
    kind = form.kind
    rule = _rule_for(hit, form)
    server = (
        form.server
        or line.evidence
        or (state.traceback_server if in_traceback else None)
        or (state.server if line.key or (in_traceback and state.server_line >= since) else None)
        or (lead.evidence if lead is not None else None)
        or form.guess
    )
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
    words, unread = bounded_words(remainder.words if remainder is not None else ())
    truncated = remainder is not None and not remainder.closed
    expected, found = _expected_found(kind, hit, rule)
    return LogError(
        line=line.number,
        span=(start, last_line),
        kind=kind,
        code=rule.code,
        severity=rule.severity,
        title=rule.title,
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
        cause=rule.cause,
        fix=rule.fix,
        words_unread=unread,
    )


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


def _token_text(token: int) -> str:
    return special_token_name(token) if token >= FIRST_SPECIAL else "an ordinary text token"


def _expected_found(kind: Kind, hit: MessageHit, rule: Rule) -> tuple[str, str]:
    match kind:
        case "header_leftover":
            words = hit.remainder.words if hit.remainder is not None else ()
            if not words:
                return f"a header: {HEADER_SHAPE}", "leftover words (this log does not show them)"
            if hit.remainder is not None and not hit.remainder.closed:
                found = (
                    f"{len(words)} word(s) openai-harmony could not place before the log cut "
                    f"the list at {words[-1]!r}; the header's last one or two words, taken as "
                    "recipient and content type, never appear in the message"
                )
            else:
                found = (
                    f"{len(words)} word(s) openai-harmony could not place, ending {words[-1]!r}; "
                    "it had already taken the header's last one or two words as recipient and "
                    "content type, so the words it blames are not the last ones the model wrote"
                )
            recipient = next((w for w in words if w.startswith("to=")), None)
            if rule.code == "HD102" and recipient is not None:
                found += (
                    f"; {recipient!r} left over means another recipient followed it, or a word "
                    "followed the content type (`<|constrain|>json json`)"
                )
            return f"a header: {HEADER_SHAPE}", found
        case "unexpected_token":
            if hit.token is None:
                return "<|start|> (id 200006) to open the next message", "a token (id not logged)"
            return "<|start|> (id 200006) to open the next message", (
                f"token {hit.token} ({_token_text(hit.token)})"
            )
        case "unknown_role":
            return (
                "a role (assistant, user, system, developer, tool) or NAME to=RECIPIENT",
                f"role {hit.role_word!r}",
            )
        case "empty_channel":
            return "a channel name right after <|channel|>", "<|channel|> then nothing"
        case "header_eos":
            return "<|message|> to close the header", "end of stream inside the header"
        case "missing_role":
            return "a role after <|start|>", "<|message|> right after <|start|>"
        case "header_decode":
            return "header tokens that decode as UTF-8", "invalid UTF-8 in the header"
        case "vocab_load":
            return "o200k_base.tiktoken, local or downloadable", _detail(hit.message)
        case "render_error":
            return "a conversation openai-harmony can render", _detail(hit.message)
        case "tool_call_parse":
            if hit.name == "lmstudio_tool":
                return "a Harmony tool call with JSON arguments", lmstudio_found(
                    hit.message, hit.context
                )
            if hit.name == "ollama_unmapped_tool":
                return "a call to one of the request's tools", (
                    f"a call to {hit.context or 'a function'!r}, which the request's tools "
                    "do not declare"
                )
            if hit.name == "provider_tool_args":
                return "JSON arguments after the tool-call header", (
                    "arguments that are not JSON"
                    + (f"; the model wrote {hit.context[:200]!r}" if hit.context else "")
                )
            err = re.search(r"\berr=(.*)$|\bError:\s*(.*)$", hit.message)
            reason = (err.group(1) or err.group(2) or "").strip() if err else _detail(hit.message)
            return "JSON arguments after the tool-call header", (
                reason + (f"; raw {hit.context!r}" if hit.context else "")
            )
        case "input_parse":
            return "output the llama.cpp Harmony parser accepts", _detail(hit.message)
        case "template_content" if hit.name == "template_thinking":
            return "a tool-call turn with its reasoning in one field", (
                "an assistant message with tool calls and both content and thinking"
            )
        case "template_content":
            return "assistant content without Harmony markup", (
                "<|channel|>...<|message|> markup in a message's content field"
            )
        case "recovered_raw_output":
            return "a stream openai-harmony parses to its end", (
                "the parser ended in a non-terminal state; the server returned the raw text "
                "of the last message instead of parsed messages"
            )
        case "server_rejected" if hit.name == "vllm_two_messages":
            count = re.search(r"but got\s*(\d+)", hit.message)
            return "exactly two messages (analysis, then final), as this check takes", (
                f"{count.group(1) if count else 'another number of'} output messages"
            )
        case "server_rejected" if hit.name == "sglang_structure_info":
            return "a request SGLang can constrain for gpt-oss", (
                "tools that ask for a structural tag, which the gpt-oss detector cannot build"
            )
        case "server_rejected":
            return "a message the server's own Harmony code accepts", (
                f"the server refused {_detail(hit.message)!r}"
            )
        case "stripped_markup":
            return "Harmony text with its special tokens", "text with the special tokens removed"
        case "markup_leak" if hit.name == "header_markup":
            markup = sorted(set(SPECIAL_TEXT.findall(hit.message)))
            return f"a {hit.context or 'header field'} without markup", (
                f"{', '.join(markup)} in the parsed message's {hit.context}: special tokens "
                "were read as text (encoded without allowed_special, or strings joined before "
                "encoding), so the next header spilled into it"
            )
        case "markup_leak":
            markup = sorted(set(SPECIAL_TEXT.findall(hit.message)))
            return "plain text in the returned message", (
                f"{', '.join(markup)} in {hit.context or 'content'}"
            )
    return "", rule.title  # pragma: no cover - every kind is handled above


def _detail(message: str) -> str:
    head, _, tail = message.partition(":")
    return (tail or head).strip()


def lmstudio_found(message: str, output: str | None) -> str:
    reason = _detail(message) or "no reason given"
    if output:
        return f"{reason}; model output {output[:200]!r}"
    return reason


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
        title=rule.title,
        message=clip(shown, MAX_MESSAGE_CHARS),
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
        cause=rule.cause,
        fix=rule.fix,
    )
