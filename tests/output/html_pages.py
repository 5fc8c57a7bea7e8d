"""Pages the HTML report tests read: a generated multi-day vLLM log with its ground truth, the
page and `--format json` of a scan, and the page's numbers read back."""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from tests.helpers import run
from tests.scan.vllm_logs import P, traceback

# (message, the code scan gives it)
MESSAGES = (
    ("Unexpected token 200002 while expecting start token 200006", "HD111"),
    ("Unknown role: assistantassistant", "HD121"),
    ('unexpected tokens remaining in message header: Some("I must refuse")', "HD101"),
)
# Hours with traffic: two days in January, then, ten months later, two days in November.
DAYS = (
    (datetime(2026, 1, 14, 9), 5),
    (datetime(2026, 1, 15, 8), 3),
    (datetime(2026, 11, 25, 10), 4),
    (datetime(2026, 11, 26, 22), 4),  # runs past midnight
)


@dataclass
class MultiDay:
    """Per ISO hour (`2026-01-14T09`): requests, and failures by code; failures in no rate."""

    requests: Counter[str] = field(default_factory=Counter)
    failures: Counter[tuple[str, str]] = field(default_factory=Counter)
    unrated: int = 0

    def rate(self, hour: str) -> float:
        return sum(n for (h, _), n in self.failures.items() if h == hour) / self.requests[hour]


def multi_day_logs(root: Path) -> MultiDay:
    """vllm.log: requests and failures over DAYS on two processes (the failures vary from hour
    to hour, one hour has none); worker.log: three tracebacks and no request line (unrated)."""
    root.mkdir(parents=True)
    truth, lines, n = MultiDay(), [], 0
    for start, hours in DAYS:
        for h in range(hours):
            moment = start + timedelta(hours=h)
            hour = moment.strftime("%Y-%m-%dT%H")
            for k in range(6 + (n % 5)):
                pid = (4121, 4377)[k % 2]
                at = moment + timedelta(minutes=k * 5)
                stamp = at.strftime("%m-%d %H:%M:%S")
                lines.append(
                    P.format(pid=pid) + f"INFO {stamp} [logger.py:71] Received request "
                    f"chatcmpl-{n}-{k}: params: SamplingParams(n=1), prompt_token_ids: None."
                )
                truth.requests[hour] += 1
                if (n * 7 + k * 3) % 5 == 0 and h != 1:
                    message, code = MESSAGES[(n + k) % len(MESSAGES)]
                    lines += traceback(pid, stamp, message)
                    truth.failures[(hour, code)] += 1
                lines.append(
                    P.format(pid=pid) + 'INFO:     10.0.0.2:5555 - "POST /v1/chat/completions '
                    'HTTP/1.1" 200 OK'
                )
            n += 1
    (root / "vllm.log").write_text("\n".join(lines) + "\n")
    lonely = [x for s in range(3) for x in traceback(9, f"11-25 1{s}:30:00", MESSAGES[1][0])]
    (root / "worker.log").write_text("\n".join(lonely) + "\n")
    truth.unrated = 3
    return truth


def page_and_json(
    inputs: list[str], target: Path, *extra: str, command: str = "scan"
) -> tuple[str, dict[str, Any]]:
    """The --html page of `scan INPUTS` (or `report`) and its --format json."""
    scan = [command, *inputs, *extra] + (["-j", "1"] if command == "scan" else [])
    result = run([*scan, "--html", str(target)])
    assert result.exit_code in (0, 1), result.stderr
    report = run([*scan, "--format", "json"])
    assert report.exit_code in (0, 1), report.stderr
    return target.read_text(), json.loads(report.stdout)


def cards(page: str) -> dict[str, str]:
    return dict(re.findall(r'<div class="card" data-total="(\w+)" data-value="([^"]*)"', page))


def table(page: str, cls: str) -> list[list[str]]:
    """A table's rows as cell texts (tags stripped), its header first."""
    body = page.split(f'<table class="{cls}">', 1)[1].split("</table>", 1)[0]
    return [
        [re.sub(r"<[^>]+>", "", cell) for cell in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row)]
        for row in re.findall(r"<tr>(.*?)</tr>", body)
    ]


def marks(page: str, chart: str, kind: str) -> list[tuple[str, str, float]]:
    """(name, bucket, value) of the bars or points in the chart titled `chart`."""
    svg = page.split(f"<title>{chart}</title>", 1)[1].split("</svg>", 1)[0]
    found = re.findall(
        rf'<{kind} class="\w+" data-name="([^"]*)" data-bucket="([^"]*)" data-value="([^"]*)"', svg
    )
    return [(name, at, float(value)) for name, at, value in found]
