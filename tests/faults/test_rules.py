"""faults/rules.py: the catalogue's stable codes, text-only classification, `harmony-doctor rules`."""

from __future__ import annotations

import json
import re
from typing import get_args

import pytest

from harmony_doctor.faults import rules
from harmony_doctor.faults.classify import FaultContext, classify
from harmony_doctor.models import ErrorKind, Kind
from tests.helpers import run

# Codes never change meaning: what each shipped code is, by kind and severity.
SHIPPED = {
    "HD101": ("header_leftover", "error"),
    "HD102": ("header_leftover", "error"),
    "HD103": ("header_leftover", "error"),
    "HD104": ("header_leftover", "error"),
    "HD105": ("header_leftover", "error"),
    "HD106": ("header_leftover", "error"),
    "HD107": ("header_leftover", "error"),
    "HD108": ("header_leftover", "error"),
    "HD111": ("unexpected_token", "error"),
    "HD112": ("unexpected_token", "error"),
    "HD113": ("unexpected_token", "error"),
    "HD114": ("unexpected_token", "error"),
    "HD115": ("unexpected_token", "error"),
    "HD121": ("unknown_role", "error"),
    "HD122": ("unknown_role", "error"),
    "HD131": ("empty_channel", "error"),
    "HD141": ("header_eos", "error"),
    "HD151": ("missing_role", "error"),
    "HD161": ("header_decode", "error"),
    "HD171": ("vocab_load", "error"),
    "HD175": ("render_error", "error"),
    "HD181": ("tool_call_parse", "error"),
    "HD182": ("tool_call_parse", "error"),
    "HD183": ("input_parse", "error"),
    "HD184": ("template_content", "error"),
    "HD201": ("unknown_channel", "warning"),
    "HD202": ("constrain_as_recipient", "warning"),
    "HD203": ("markup_leak", "warning"),
    "HD204": ("missing_channel", "warning"),
    "HD205": ("markup_leak", "warning"),
}


def test_shipped_codes_keep_their_meaning() -> None:
    for code, (kind, severity) in SHIPPED.items():
        rule = rules.RULES[code]
        assert (rule.kind, rule.severity) == (kind, severity), code


def test_catalogue_shape() -> None:
    for code, rule in rules.RULES.items():
        assert re.fullmatch(r"HD[12]\d\d", code)
        assert rule.severity == ("error" if code.startswith("HD1") else "warning")
        assert rule.title and rule.cause and rule.fix
        assert all(re.fullmatch(r"[\w.-]+/[\w.-]+#\d+", ref) for ref in rule.refs), rule.refs
    kinds = {rule.kind for rule in rules.RULES.values()}
    every_kind = {k for part in get_args(Kind) for k in get_args(part)}
    assert every_kind <= kinds


def test_each_kind_has_one_catch_all_marked_whatever_the_order() -> None:
    """The catch-all is a field of its rule, not its place: each kind has exactly one, and
    reversing the catalogue's order changes no kind's."""
    for kind in {rule.kind for rule in rules.RULES.values()}:
        marked = [r for r in rules.rules_for(kind) if r.catch_all]
        assert len(marked) == 1, kind
        assert rules.default_rule(kind) is marked[0]
    reversed_rules = tuple(reversed(rules.RULES.values()))
    for kind in {rule.kind for rule in reversed_rules}:
        (catch_all,) = (r for r in reversed_rules if r.kind == kind and r.catch_all)
        assert catch_all is rules.default_rule(kind)


def test_catch_all_rules_unchanged() -> None:
    expected = {"header_leftover": "HD106", "unexpected_token": "HD114", "unknown_role": "HD122"}
    for kind, code in expected.items():
        assert rules.default_rule(kind).code == code  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kind", "fields", "code"),
    [
        ("unexpected_token", {"token": 200002}, "HD111"),
        ("unexpected_token", {"token": 12606}, "HD112"),
        ("unexpected_token", {"token": 200007}, "HD113"),
        ("unexpected_token", {"token": 200012}, "HD113"),
        ("unexpected_token", {"token": 13}, "HD114"),
        ("unexpected_token", {"token": 173781}, "HD115"),
        ("unexpected_token", {"token": None}, "HD114"),
        ("unknown_role", {"role_word": "<|start|>assistant"}, "HD121"),
        ("unknown_role", {"role_word": "assistantassistant"}, "HD121"),
        ("unknown_role", {"role_word": "<|start|><|start|>assistant"}, "HD121"),
        ("unknown_role", {"role_word": "narrator"}, "HD122"),
        ("header_leftover", {"leftover": "prompt_token_id=[200006, 17360,"}, "HD105"),
        ("header_leftover", {"leftover": " ".join(str(n) for n in range(200, 230))}, "HD105"),
        ("header_leftover", {"leftover": "to=functions.get_time"}, "HD102"),
        ("header_leftover", {"leftover": "to=functions.a to=functions.a"}, "HD102"),
        ("header_leftover", {"leftover": "done. <|end|><|start|>assistant"}, "HD107"),
        ("header_leftover", {"leftover": "x <|channel|>final"}, "HD103"),
        ("header_leftover", {"leftover": "<|constrain|>response"}, "HD104"),
        ("header_leftover", {"leftover": "We need to answer the user."}, "HD101"),
        ("header_leftover", {"leftover": "\u2013\u2013commentary"}, "HD108"),
        ("header_leftover", {"leftover": "commentary?"}, "HD108"),
        # `json` left over: words followed the content type (`json extra words`)
        ("header_leftover", {"leftover": "json"}, "HD104"),
        ("header_leftover", {"leftover": ""}, "HD106"),
        ("empty_channel", {}, "HD131"),
        ("header_eos", {}, "HD141"),
        ("missing_role", {}, "HD151"),
        ("header_decode", {}, "HD161"),
    ],
)
def test_classify_from_text_alone(kind: ErrorKind, fields: dict[str, object], code: str) -> None:
    assert classify(FaultContext(kind=kind, **fields)).code == code  # type: ignore[arg-type]


def test_every_error_kind_classifies() -> None:
    for kind in get_args(ErrorKind):
        assert classify(FaultContext(kind=kind)).kind == kind


# --- the command -----------------------------------------------------------------------------


def test_rules_lists_every_code() -> None:
    result = run(["rules"])
    assert (result.exit_code, result.stderr) == (0, "")
    for code in rules.RULES:
        assert code in result.stdout
    codes = re.findall(r"^(HD\d{3})", result.stdout, re.M)
    assert codes == sorted(rules.RULES)


def test_rules_one_code_in_full() -> None:
    result = run(["rules", "hd112"])
    assert result.exit_code == 0
    rule = rules.RULES["HD112"]
    assert rule.title in result.stdout
    assert "vllm-project/vllm#22386" in result.stdout
    assert "fix" in result.stdout


def test_rules_json() -> None:
    listing = json.loads(run(["rules", "--format", "json"]).stdout)
    assert listing["schema"] == "harmony-doctor.rules/1"
    assert [r["code"] for r in listing["rules"]] == sorted(rules.RULES)
    one = json.loads(run(["rules", "HD205", "-f", "json"]).stdout)["rule"]
    assert one["kind"] == "markup_leak"
    assert one["refs"] == list(rules.RULES["HD205"].refs)


def test_rules_unknown_code() -> None:
    result = run(["rules", "HD999"])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert "unknown rule 'HD999'" in result.stderr


def test_rules_markdown_is_the_codes_reference() -> None:
    """`rules --format markdown` writes the whole reference; `rules CODE` the code's section
    of it, byte for byte; the text and JSON formats are unchanged by it."""
    page = run(["rules", "--format", "markdown"])
    assert (page.exit_code, page.stderr) == (0, "")
    assert page.stdout.startswith("# Diagnosis codes\n")
    assert re.findall(r"^## (HD\d{3})$", page.stdout, re.M) == sorted(rules.RULES)
    one = run(["rules", "hd112", "-f", "markdown"])
    assert (one.exit_code, one.stderr) == (0, "")
    assert one.stdout.startswith("## HD112\n")
    assert f"\n{one.stdout}" in page.stdout
    assert one.stdout.endswith(".\n")  # whole lines, for pipes
    # Markdown is rules' own format: the shared --format of other commands is unchanged.
    other = run(["explain", "-f", "markdown"], "200006")
    assert other.exit_code == 2
    assert "'markdown' is not one of 'text', 'json'" in other.stderr


def test_codes_reference_is_current() -> None:
    """docs/codes.md is what `rules --format markdown` writes from the catalogue today."""
    from tests.helpers import REPO

    committed = (REPO / "docs" / "codes.md").read_text(encoding="utf-8")
    generated = run(["rules", "--format", "markdown"]).stdout
    assert committed == generated, (
        "docs/codes.md is stale: regenerate it with "
        "`.venv/bin/harmony-doctor rules --format markdown > docs/codes.md`"
    )


def test_readme_points_at_the_codes_reference_and_holds_no_code_table() -> None:
    """The codes are listed once, in the generated page: the README only points at it."""
    from tests.helpers import REPO

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "[docs/codes.md](docs/codes.md)" in readme
    assert not re.search(r"^\| ?HD\d{3} ?\|", readme, re.M)
