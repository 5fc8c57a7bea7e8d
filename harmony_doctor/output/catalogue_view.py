"""`rules` for people: the diagnosis catalogue as a table, or one rule in full."""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from harmony_doctor.faults.rules import Rule
from harmony_doctor.output.styles import DIM, ERROR, LABEL, WARNING


def rules_view(catalogue: Iterable[Rule]) -> Table:
    """The diagnosis catalogue, one code a row."""
    table = Table(box=None, pad_edge=False, show_edge=False, header_style=DIM)
    table.add_column("code", no_wrap=True)
    table.add_column("kind", no_wrap=True)
    table.add_column("severity", no_wrap=True)
    table.add_column("title")
    for rule in catalogue:
        table.add_row(
            Text(rule.code, style=LABEL),
            rule.kind,
            Text(rule.severity, style=ERROR if rule.severity == "error" else WARNING),
            rule.title,
        )
    return table


def rule_view(rule: Rule) -> RenderableType:
    """One rule in full, as `harmony-doctor rules CODE` shows it."""
    head = Text.assemble((f" {rule.code} ", "reverse"), "  ", (rule.title, LABEL))
    facts = Table.grid(padding=(0, 2))
    facts.add_column(style=LABEL, no_wrap=True)
    facts.add_column()
    facts.add_row("kind", rule.kind)
    facts.add_row(
        "severity", Text(rule.severity, style=ERROR if rule.severity == "error" else WARNING)
    )
    facts.add_row("why", rule.cause)
    facts.add_row("fix", rule.fix)
    if rule.refs:
        facts.add_row("refs", "\n".join(rule.refs))
    return Group(head, Padding(facts, (1, 0, 0, 2), expand=False))
