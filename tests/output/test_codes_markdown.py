"""output/codes_markdown.py: the codes reference says what the catalogue holds, all of it, and
nothing from a catalogue entry becomes markup."""

from __future__ import annotations

from markdown_it import MarkdownIt
from markdown_it.token import Token

import harmony_doctor as hd
from harmony_doctor.faults.catalogue import FORMS, Form
from harmony_doctor.faults.rules import Rule
from harmony_doctor.output.codes_markdown import code_section, codes_page, forms_reporting
from harmony_doctor.output.escape import visible
from tests.fuzz_inputs import NASTY_PIECES

MARKDOWN = MarkdownIt("commonmark").enable("table")


def _sections(page: str) -> dict[str, list[Token]]:
    """The page's blocks by the `## CODE` heading they stand under."""
    sections: dict[str, list[Token]] = {}
    current: list[Token] | None = None
    tokens = MARKDOWN.parse(page)
    for index, token in enumerate(tokens):
        if token.type == "heading_open" and token.tag == "h2":
            current = sections.setdefault(tokens[index + 1].content, [])
        elif current is not None:
            current.append(token)
    return sections


def _children(tokens: list[Token], kind: str) -> list[Token]:
    """The inline tokens of `kind` (code_inline, link_open ...) in `tokens`, in order."""
    return [c for t in tokens if t.type == "inline" for c in t.children or () if c.type == kind]


def _links(tokens: list[Token]) -> list[str]:
    return [str(link.attrGet("href")) for link in _children(tokens, "link_open")]


def _code_spans(tokens: list[Token]) -> list[str]:
    return [span.content for span in _children(tokens, "code_inline")]


def _paragraph(tokens: list[Token], label: str) -> str:
    """The text of the paragraph that starts with the bold `label`, without it."""
    for token in tokens:
        if token.type == "inline" and token.content.startswith(f"**{label}**"):
            children = token.children or []
            return "".join(c.content for c in children[3:])
    raise AssertionError(f"no {label} paragraph")


def test_page_indexes_every_code_and_gives_each_its_section_in_order() -> None:
    catalogue = hd.list_rules()
    page = codes_page(catalogue)
    tokens = MARKDOWN.parse(page)
    assert [link for link in _links(tokens) if link.startswith("#")] == [
        f"#{r.code.lower()}" for r in catalogue
    ]
    assert list(_sections(page)) == [r.code for r in catalogue]
    rows = [t for t in tokens if t.type == "tr_open"]
    assert len(rows) == len(catalogue) + 1  # the header row


def test_each_section_says_the_rule_as_the_catalogue_holds_it() -> None:
    sections = _sections(codes_page(hd.list_rules()))
    for rule in hd.list_rules():
        tokens = sections[rule.code]
        # What a reader sees is the catalogue's text, its backticks read as code spans.
        assert _paragraph(tokens, "Cause.") == " " + rule.cause.replace("`", "")
        assert _paragraph(tokens, "Fix.") == " " + rule.fix.replace("`", "")
        assert rule.kind in _code_spans(tokens)
        hrefs = _links(tokens)
        assert len(hrefs) == len(rule.refs)
        for ref, href in zip(rule.refs, hrefs, strict=True):
            repo, number = ref.split("#")
            assert href == f"https://github.com/{repo}/issues/{number}"


def test_every_real_example_stands_under_each_code_it_can_give() -> None:
    sections = _sections(codes_page(hd.list_rules()))
    for rule in hd.list_rules():
        spans = _code_spans(sections[rule.code])
        reporting = forms_reporting(rule)
        for form in reporting:
            for example in form.examples:
                assert visible(example) in spans, (rule.code, form.name)
        others = [f for f in FORMS if f not in reporting and f.code is not None]
        for form in others:
            assert not set(form.examples) & set(spans), (rule.code, form.name)
    # Every form's examples are shown somewhere: no entry of the catalogue is left out.
    shown = {s for tokens in sections.values() for s in _code_spans(tokens)}
    assert {e for form in FORMS for e in form.examples} <= shown


def test_a_code_no_message_reports_says_how_it_is_found() -> None:
    token_only = [r for r in hd.list_rules() if not forms_reporting(r)]
    assert token_only, "every code has a message form: this test checks nothing"
    for rule in token_only:
        assert "**Found by** replaying the tokens" in code_section(rule)


def test_hostile_catalogue_text_becomes_no_markup() -> None:
    nasty = "".join(NASTY_PIECES)
    rule = Rule("HD999", "markup_leak", "warning", nasty, nasty, nasty, ("a/b#1", nasty))
    form = Form("markup_leak", "markup_leak", "server", nasty, (nasty, "`x` *y*"), code="HD999")
    section = code_section(rule, (form,))
    assert visible(section) == section  # nothing unsafe written as it is
    tokens = MARKDOWN.parse(section)
    assert {t.type for t in tokens} <= {
        "heading_open",
        "heading_close",
        "paragraph_open",
        "paragraph_close",
        "inline",
        "bullet_list_open",
        "bullet_list_close",
        "list_item_open",
        "list_item_close",
    }
    assert not _children(tokens, "html_inline")
    assert not _children(tokens, "em_open")  # no markup from the text: bold only the page's own
    assert _links(tokens) == ["https://github.com/a/b/issues/1"]
    assert visible(nasty).replace("\n", "\\n").replace("\t", "\\t") in _code_spans(tokens)
