"""--html: one self-contained page, hostile text escaped, rendered by headless Chromium."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers import run
from tests.output.operator_logs import HOSTILE_NAME, operator_logs

# Anything the browser could fetch: an attribute or CSS pointing at a URL.
# (A link to a log file on this machine, `href="file://..."`, is a link, not a fetch.)
FETCHING = re.compile(r"""(?:src|action|xlink:href)\s*=|url\(|@import|<script|<link""", re.I)


def markup(text: str) -> str:
    """The page without its text: every tag, and the style sheet (a log's words in the text
    may name anything, escaped)."""
    return "".join(re.findall(r"<[^>]+>", text)) + text.split("<style>", 1)[1].split("</style>")[0]


def counts_chart(text: str) -> str:
    return text.split("<title>Failures per hour by code</title>", 1)[1].split("</svg>", 1)[0]


@pytest.fixture
def page(tmp_path: Path) -> Path:
    logs = operator_logs(tmp_path / "logs")
    target = tmp_path / "report.html"
    result = run(["scan", str(logs), "-j", "1", "--html", str(target), "--by", "code,file"])
    assert result.exit_code == 1, result.stderr
    return target


def test_page_is_self_contained_and_escapes_hostile_text(page: Path) -> None:
    text = page.read_text()
    assert not FETCHING.search(markup(text))
    assert all(h.startswith("file://") for h in re.findall(r'href="([^"]*)"', text))
    # URLs appear only as escaped text (the hostile message names one), never as markup
    assert not re.search(r"<[^>]*https?://", text)
    assert "<b>|" not in text and "100%&lt;b&gt;|[x].log" in text
    assert HOSTILE_NAME not in text
    assert counts_chart(text).count('<rect class="bar"') == 4  # by hour: 10h HD111+HD101, 11h, 12h


def test_page_tables_hold_every_group_and_file(page: Path) -> None:
    text = page.read_text()
    files = text.split('<table class="files">', 1)[1].split("</table>", 1)[0]
    assert files.count("<tr>") == 1 + 4  # header + four logs
    groups = text.split('<table class="groups">', 1)[1].split("</table>", 1)[0]
    assert groups.count("<tr>") == 1 + 4
    assert "<h2>Failures per hour by code</h2><svg" in text


def test_page_opens_in_headless_chromium_offline(page: Path, tmp_path: Path) -> None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("chromium is not installed (Debian: apt-get install chromium)")
    offline = [
        chromium, "--headless", "--no-sandbox", "--disable-gpu", "--proxy-server=127.0.0.1:9",
        '--host-resolver-rules=MAP * ~NOTFOUND', f"--user-data-dir={tmp_path / 'profile'}",
    ]  # fmt: skip
    dom = subprocess.run(
        [*offline, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120
    )
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert dom.stdout.count('class="bar"') == page.read_text().count('class="bar"') > 4
    assert dom.stdout.count("<tr>") == page.read_text().count("<tr>")
    shot = tmp_path / "report.png"  # kept under the pytest tmp dir as the test's artifact
    subprocess.run(
        [*offline, "--window-size=1100,1400", f"--screenshot={shot}", page.as_uri()],
        capture_output=True, timeout=120, check=True,
    )  # fmt: skip
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000
