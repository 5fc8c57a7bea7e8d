"""--html: the page's numbers are `--format json`'s and the ground truth's; the rate is drawn on
a real time axis (a ten-month gap is cut and labelled, never adjacent)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from harmony_doctor.output.html.chart import OTHER_COLOUR, PALETTE
from harmony_doctor.output.operator import percent, unrated_line
from tests.helpers import SAMPLES, run
from tests.output.html_pages import (
    MultiDay,
    cards,
    marks,
    multi_day_logs,
    page_and_json,
    table,
)
from tests.output.test_html_report import FETCHING, markup

TOTALS = ("failures", "requests", "rate", "unrated", "files", "lines", "skipped", "partial")


@pytest.fixture(scope="module")
def multi_day(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, Any], MultiDay]:
    root = tmp_path_factory.mktemp("multi")
    truth = multi_day_logs(root / "logs")
    page, report = page_and_json([str(root / "logs")], root / "page.html")
    return page, report, truth


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, Any]]:
    return page_and_json([str(SAMPLES)], tmp_path_factory.mktemp("samples") / "page.html")


def _same_totals(page: str, report: dict[str, Any]) -> None:
    shown = cards(page)
    assert set(shown) == set(TOTALS)
    for key in TOTALS:
        want = report["totals"][key]
        if want is None:
            assert shown[key] == "", key
        elif isinstance(want, float):
            assert float(shown[key]) == want, key
        else:
            assert int(shown[key]) == want, key


def _same_groups(page: str, report: dict[str, Any]) -> None:
    header, *rows = table(page, "groups")
    count, share, rate = header.index("count"), header.index("share"), header.index("rate")
    groups = report["groups"]
    assert len(rows) == len(groups)
    for row, group in zip(rows, groups, strict=True):
        assert int(row[count].replace(",", "")) == group["count"]
        assert row[share] == percent(group["share"])
        if group["rate"] is not None:
            assert row[rate] == percent(group["rate"])
        else:  # never a rate the JSON does not give
            assert row[rate] == (group["rate_note"] or "unknown")


def test_samples_page_numbers_equal_the_json(samples: tuple[str, dict[str, Any]]) -> None:
    page, report = samples
    _same_totals(page, report)
    _same_groups(page, report)
    assert report["totals"]["unrated"] > 0  # lmdeploy's failures: no request lines
    assert unrated_line(report["totals"]) in page  # the one sentence, with the JSON's count
    assert f"{report['totals']['unrated']} failures unrated" in page


def test_multi_day_numbers_equal_the_json_and_the_truth(
    multi_day: tuple[str, dict[str, Any], MultiDay],
) -> None:
    page, report, truth = multi_day
    _same_totals(page, report)
    _same_groups(page, report)
    rated = sum(truth.failures.values())
    assert report["totals"]["failures"] == rated + truth.unrated
    assert report["totals"]["requests"] == sum(truth.requests.values())
    assert report["totals"]["rate"] == pytest.approx(rated / sum(truth.requests.values()))
    scope = f"{rated:,} failure(s) over the {sum(truth.requests.values()):,} requests"
    assert scope in page


def test_rate_per_hour_by_code_adds_up_to_each_hours_truth(
    multi_day: tuple[str, dict[str, Any], MultiDay],
) -> None:
    page, _, truth = multi_day
    bars = marks(page, "Failure rate per hour by code", "rect")
    per_hour: dict[str, float] = {}
    for code, at, value in bars:
        hour = at[:13]
        assert value == pytest.approx(truth.failures[(hour, code)] / truth.requests[hour])
        per_hour[hour] = per_hour.get(hour, 0) + value
    failing = {h for (h, _), n in truth.failures.items() if n}
    assert set(per_hour) == failing
    for hour in failing:
        assert per_hour[hour] == pytest.approx(truth.rate(hour))
    # the origin's line: one point per hour with requests, 0 where none failed
    points = marks(page, "Failure rate per hour by origin", "circle")
    assert {at[:13]: v for _, at, v in points} == pytest.approx(
        {h: truth.rate(h) if h in failing else 0.0 for h in truth.requests}
    )
    assert "3 failure(s) not drawn: in no rate" in page


def _x(svg_mark: str) -> float:
    return float(re.search(r' x="([\d.]+)"', svg_mark).group(1))  # type: ignore[union-attr]


def test_a_ten_month_gap_is_cut_and_labelled(
    multi_day: tuple[str, dict[str, Any], MultiDay],
) -> None:
    page, _, _ = multi_day
    svg = page.split("<title>Failures per hour by code</title>", 1)[1].split("</svg>", 1)[0]
    assert re.findall(r'class="gap-length"[^>]*>([^<]+)<', svg) == ["10 months"]
    gap = re.search(r'<rect class="gap"[^>]*>', svg).group(0)  # type: ignore[union-attr]
    bars = re.findall(r'<rect class="bar"[^>]*data-bucket="(2026-\d\d)[^>]*>', svg)
    january = [_x(m) for m in re.findall(r'<rect class="bar"[^>]*2026-01-[^>]*>', svg)]
    november = [_x(m) for m in re.findall(r'<rect class="bar"[^>]*2026-11-[^>]*>', svg)]
    assert bars and january and november
    assert max(january) < _x(gap) < min(november)
    # within a run the axis is time: hours two apart are twice as far as hours one apart
    hours = sorted(
        {(at, _x(m)) for m in re.findall(r'<rect class="bar"[^>]*>', svg)
         for at in re.findall(r'data-bucket="(2026-01-14T[^"]+)"', m)}
    )  # fmt: skip
    (_, x0), (_, x2), (_, x3) = hours[:3]  # 09h, 11h, 12h (10h has no failure)
    assert x2 - x0 == pytest.approx(2 * (x3 - x2), abs=0.2)


def test_two_origins_each_rated_in_their_own_scopes(tmp_path: Path) -> None:
    multi_day_logs(tmp_path / "logs")
    events = []
    for origin, inputs in (
        ("alpha", [tmp_path / "logs"]),
        ("beta", [SAMPLES / "vllm-traceback.log"]),
    ):
        events.append(tmp_path / f"{origin}.jsonl")
        result = run(["scan", *map(str, inputs), "-j", "1", "--origin", origin,
                      "--events", str(events[-1])])  # fmt: skip
        assert result.exit_code == 1, result.stderr
    page, report = page_and_json(
        [str(e) for e in events], tmp_path / "two.html", "--by", "origin", command="report"
    )
    _same_totals(page, report)
    _same_groups(page, report)
    header, *rows = table(page, "origins")
    by_origin = {g["origin"]: g for g in report["groups"]}
    assert {r[0] for r in rows} == set(by_origin) == {"alpha", "beta"}
    for row in rows:
        group = by_origin[row[0]]
        assert int(row[header.index("failures")]) == group["count"]
        assert row[header.index("failure rate")] == percent(group["rate"])
        assert int(row[header.index("no rate")]) == group["unrated"]
    points = marks(page, "Failure rate per hour by origin", "circle")
    assert {name for name, _, _ in points} == {"alpha", "beta"}
    assert all(0 <= value <= 1 for _, _, value in points)


def test_requests_without_a_failure_draw_a_zero_rate(tmp_path: Path) -> None:
    log = tmp_path / "quiet.log"
    log.write_text(
        "(APIServer pid=5) INFO 11-27 10:00:00 [logger.py:71] Received request chatcmpl-1: "
        "params: SamplingParams(n=1), prompt_token_ids: None.\n"
        '(APIServer pid=5) INFO:     10.0.0.2:5555 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
    )
    page, report = page_and_json([str(log)], tmp_path / "quiet.html", "--origin", "h")
    _same_totals(page, report)
    assert report["totals"]["rate"] == 0.0 and cards(page)["rate"] == "0.0"
    points = marks(page, "Failure rate per hour by origin", "circle")
    assert [(name, value) for name, _, value in points] == [("h", 0.0)]
    assert page.count("No failure to draw.") == 2  # by code, and the failure counts


def test_legend_is_ranked_by_count_with_distinct_colours(
    multi_day: tuple[str, dict[str, Any], MultiDay],
) -> None:
    page, report, _ = multi_day
    legend = (
        page.split("<title>Failures per hour by code</title>", 1)[1]
        .split('<div class="legend">', 1)[1]
        .split("</div>", 1)[0]
    )
    entries = re.findall(r'data-name="([^"]+)"><i style="background:(#\w+)"></i>[^(]*\(([\d,]+)\)',
                         legend)  # fmt: skip
    counts = [int(n.replace(",", "")) for _, _, n in entries]
    assert counts == sorted(counts, reverse=True) and len(entries) == 3
    by_code = {g["code"]: g["count"] for g in report["groups"]}
    assert {name: n for name, _, n in entries} == {c: f"{n:,}" for c, n in by_code.items()}
    assert [c for _, c, _ in entries] == list(PALETTE[:3])


def test_names_past_the_palette_share_a_distinct_other() -> None:
    from harmony_doctor.output.html.chart import colours

    names = tuple(f"HD{n}" for n in range(100, 112))
    mapping = colours(names)
    assert [mapping[n] for n in names[: len(PALETTE)]] == list(PALETTE)
    assert {mapping[n] for n in names[len(PALETTE) :]} == {OTHER_COLOUR}
    assert OTHER_COLOUR not in PALETTE and len(set(PALETTE)) == len(PALETTE)
    # no palette colour is a grey near OTHER's: every one has a channel far from the others
    for colour in PALETTE:
        r, g, b = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
        assert max(r, g, b) - min(r, g, b) > 60 or max(r, g, b) < 40


def test_numeric_headers_align_with_their_values(
    samples: tuple[str, dict[str, Any]],
) -> None:
    page, _ = samples
    for cls in ("groups", "patterns", "origins", "files"):
        if f'<table class="{cls}">' not in page:
            continue
        body = page.split(f'<table class="{cls}">', 1)[1].split("</table>", 1)[0]
        rows = re.findall(r"<tr>(.*?)</tr>", body)
        right = [
            [i for i, c in enumerate(re.findall(r"<t[hd]([^>]*)>", row)) if "n" in c.split("=")[-1]]
            for row in rows
        ]
        assert right[0], cls
        assert all(r == right[0] for r in right[1:]), cls


def test_patterns_name_an_example_each_with_a_link_to_its_line(
    samples: tuple[str, dict[str, Any]],
) -> None:
    page, report = samples
    header, *rows = table(page, "patterns")
    assert header == ["code", "pattern", "count", "share", "example"]
    assert sum(int(r[2].replace(",", "")) for r in rows) <= report["totals"]["failures"]
    links = re.findall(r'<a href="(file://[^"]+)">([^<]+):(\d+)</a>', page)
    assert len(links) == len(rows)
    for uri, shown, line in links:
        path = Path(shown)
        assert path.is_file() and uri == path.resolve().as_uri()
        assert 1 <= int(line) <= len(path.read_text().splitlines())


def test_the_page_fetches_nothing(samples: tuple[str, dict[str, Any]]) -> None:
    page, _ = samples
    assert not FETCHING.search(markup(page))
    assert all(h.startswith("file://") for h in re.findall(r'href="([^"]*)"', page))
    assert not re.search(r"https?://", markup(page))
