"""`explain --grammar`: what guided decoding with the Harmony grammar would have done."""

from __future__ import annotations

from rich.text import Text

from harmony_doctor.harmony.vocab import Vocab
from harmony_doctor.output.escape import safe_text
from harmony_doctor.output.styles import LABEL, OK, WARNING
from harmony_doctor.output.tokens import token_label
from harmony_doctor.streams.guided import LogCheck, StreamCheck


def stream_check_view(check: StreamCheck, vocab: Vocab) -> Text:
    """Blocked or not, at which token, and what the grammar allowed there."""
    result, tokens, origin = check.run, check.tokens, check.origin
    out = Text()
    out.append("Guided decoding", style=LABEL)
    out.append(" with ")
    out.append_text(safe_text(check.source, keep_newlines=False))
    out.append(" (llguidance)\n")
    blocked = result.blocked_index
    if blocked is None:
        out.append("  not blocked", style=WARNING)
        out.append("     every token fits the grammar")
        if result.complete:
            out.append(", and the stream ends where a completion may end")
        else:
            out.append(", but the stream stops before <|return|> or <|call|>")
        return out
    out.append("  blocked at", style=OK)
    out.append(f"      token {blocked} ")
    out.append_text(token_label(tokens[blocked], vocab))
    out.append(f" (id {tokens[blocked]})")
    if origin == blocked:
        out.append(", where the stream left the format")
    elif origin is not None:
        out.append(f"; the replay puts the origin at token {origin}")
    if result.end_allowed and not result.allowed_count:
        out.append("\n  allowed there   only the end of the completion")
        return out
    out.append(f"\n  allowed there   {result.allowed_count} token(s)")
    for n, token in enumerate(result.allowed):
        out.append(", " if n else ": ")
        out.append_text(token_label(token, vocab))
    others = result.allowed_count - len(result.allowed)
    if others > 0:
        out.append(f"{' and' if result.allowed else ':'} {others} text token(s)")
    return out


def log_check_view(check: LogCheck) -> Text:
    """A verdict per logged failure, judged from its error message."""
    view = Text()
    view.append("Guided decoding", style=LABEL)
    view.append(" with the default Harmony grammar, judged from the error messages")
    if check.custom:
        view.append(" (--grammar-file needs token ids)")
    for verdict in check.verdicts:
        view.append(f"\n  line {verdict.line:<6}")
        view.append(
            "would have blocked it" if verdict.blocked else "would not have",
            style=OK if verdict.blocked else WARNING,
        )
        view.append(": ")
        view.append_text(safe_text(verdict.why, keep_newlines=False))
    return view
