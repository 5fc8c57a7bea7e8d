"""`rules --format markdown`: the diagnosis catalogue as the codes reference (docs/codes.md).

Everything on the page comes from the catalogue: each rule's title, cause, fix and threads
(faults/rules.py), and the failure forms that report it, with who writes them, in which
releases, and their real examples (faults/catalogue.py). Nothing is restated here, so the
page is regenerated rather than edited, and a test fails when the committed page is stale.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from harmony_doctor.faults.catalogue import FORMS, Form
from harmony_doctor.faults.rules import Rule
from harmony_doctor.output.escape import markdown_code, markdown_text

REGENERATE = "harmony-doctor rules --format markdown > docs/codes.md"
# A thread as the catalogue cites it: `owner/repo#123`, an issue or a pull request on GitHub
# (GitHub sends /issues/N of a pull request on to the pull request).
_THREAD = re.compile(r"(?P<repo>[A-Za-z0-9][\w.-]*/[\w.-]+)#(?P<number>\d+)")


def codes_page(rules: Iterable[Rule]) -> str:
    """The whole reference: an index of every code, then one section per code."""
    catalogue = tuple(rules)
    head = [
        "# Diagnosis codes",
        "",
        f"<!-- Generated from the catalogue by `{REGENERATE}`; do not edit by hand. -->",
        "",
        "Every diagnosis harmony-doctor reports has a stable code that never changes meaning: "
        "`HD1xx` are errors (openai-harmony's parser, then from `HD171` the failures only logs "
        "show: loading, rendering, other engines' Harmony parsers), `HD2xx` are warnings "
        "nothing raised. The kind is the coarse class of the JSON output; a kind has several "
        "codes when the causes, and so the fixes, differ. The same failure gets the same code "
        "whether it is read from token ids or from a logged error message.",
        "",
        "`harmony-doctor rules` lists the codes in a terminal, `harmony-doctor rules CODE` shows "
        "one, `--format json` is for programs.",
        "",
        "| code | kind | severity | title |",
        "|---|---|---|---|",
    ]
    rows = [
        f"| [{rule.code}](#{rule.code.lower()}) | {markdown_code(rule.kind, cell=True)} "
        f"| {rule.severity} | {markdown_text(rule.title, cell=True)} |"
        for rule in catalogue
    ]
    sections = [code_section(rule) for rule in catalogue]
    return "\n".join([*head, *rows, ""]) + "\n" + "\n".join(sections)


def code_section(rule: Rule, forms: Sequence[Form] = FORMS) -> str:
    """One code in full (`rules CODE --format markdown`): its title, kind and severity, cause,
    fix, the messages that report it (among `forms`, the catalogue's) with their writers and
    real examples, and its threads."""
    lines = [
        f"## {rule.code}",
        "",
        f"**{markdown_text(rule.title)}**",
        "",
        f"Kind {markdown_code(rule.kind)}, severity {rule.severity}.",
        "",
        f"**Cause.** {markdown_text(rule.cause)}",
        "",
        f"**Fix.** {markdown_text(rule.fix)}",
        "",
    ]
    reporting = forms_reporting(rule, forms)
    if reporting:
        lines += ["**Reported by** (who writes it, and real examples of the text):", ""]
        for form in reporting:
            lines += _form_lines(form)
        lines.append("")
    else:
        lines += [
            "**Found by** replaying the tokens (ids or Harmony text): no logged message in the "
            "catalogue reports this code.",
            "",
        ]
    if rule.refs:
        lines += ["**Threads:** " + ", ".join(_thread_link(ref) for ref in rule.refs) + ".", ""]
    return "\n".join(lines)


def forms_reporting(rule: Rule, forms: Sequence[Form] = FORMS) -> tuple[Form, ...]:
    """The failure forms that can give `rule`: those that name its code, and those of its kind
    that name none (the details of the message decide among the kind's codes)."""
    return tuple(
        form
        for form in forms
        if form.code == rule.code or (form.code is None and form.kind == rule.kind)
    )


def _form_lines(form: Form) -> list[str]:
    """A form as a list item: who writes it and in which releases (the catalogue's words), the
    server findings then name, and its real examples, each a code span."""
    facts = [markdown_text(form.writers)]
    if form.server is not None:
        facts.append(f"findings name server {markdown_code(form.server)}")
    elif form.guess is not None:
        facts.append(f"findings name server {markdown_code(form.guess)} when no line names one")
    if form.code is None:
        facts.append("the message's details decide the code")
    lines = [f"- {'; '.join(facts)}"]
    lines += [f"  - {markdown_code(example)}" for example in form.examples]
    return lines


def _thread_link(ref: str) -> str:
    thread = _THREAD.fullmatch(ref)
    if thread is None:
        return markdown_text(ref)
    url = f"https://github.com/{thread['repo']}/issues/{thread['number']}"
    return f"[{markdown_text(ref)}]({url})"
