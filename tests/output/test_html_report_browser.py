"""--html in headless Chromium: the page on samples/ and on a generated multi-day log renders
to a screenshot (kept in the pytest tmp dir) that is not blank, with nothing fetched."""

from __future__ import annotations

import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from tests.helpers import SAMPLES
from tests.output.html_pages import multi_day_logs, page_and_json


def ink(png: bytes) -> float:
    """The share of an 8-bit RGB(A) PNG's pixels that are not white (the page's background)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    at, chunks, header = 8, [], b""
    while at < len(png):
        (size,) = struct.unpack(">I", png[at : at + 4])
        kind, data = png[at + 4 : at + 8], png[at + 8 : at + 8 + size]
        if kind == b"IHDR":
            header = data
        elif kind == b"IDAT":
            chunks.append(data)
        at += 12 + size
    width, height, depth, colour = struct.unpack(">IIBB", header[:10])
    assert depth == 8 and colour in (2, 6), (depth, colour)
    channels = 3 if colour == 2 else 4
    raw, stride = zlib.decompress(b"".join(chunks)), width * channels
    previous, inked = bytearray(stride), 0
    for row in range(height):
        start = row * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride):  # undo the row's filter (PNG spec, section 9)
            left = line[i - channels] if i >= channels else 0
            up, corner = previous[i], previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 255
            elif kind == 2:
                line[i] = (line[i] + up) & 255
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                near = left if pa <= pb and pa <= pc else up if pb <= pc else corner
                line[i] = (line[i] + near) & 255
        inked += sum(1 for x in range(0, stride, channels) if min(line[x : x + 3]) < 200)
        previous = line
    return float(inked) / float(width * height)


def screenshot(page: Path, shot: Path, profile: Path, size: str = "1200,2000") -> bytes:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("chromium is not installed (Debian: apt-get install chromium)")
    done = subprocess.run(
        [
            chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
            "--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND",
            f"--user-data-dir={profile}", f"--window-size={size}",
            f"--screenshot={shot}", page.as_uri(),
        ],
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0 and shot.is_file(), done.stderr[-2000:]
    return shot.read_bytes()


def test_ink_tells_a_blank_page_from_a_drawn_one(tmp_path: Path) -> None:
    blank, drawn = tmp_path / "blank.html", tmp_path / "drawn.html"
    blank.write_text("<!DOCTYPE html><html><body></body></html>")
    drawn.write_text('<!DOCTYPE html><html><body style="margin:0"><div style="width:200px;'
                     'height:100px;background:#0072B2"></div></body></html>')  # fmt: skip
    assert ink(screenshot(blank, tmp_path / "blank.png", tmp_path / "p", "400,200")) == 0
    assert ink(screenshot(drawn, tmp_path / "drawn.png", tmp_path / "p", "400,200")) == 0.25


@pytest.mark.parametrize("which", ["samples", "multi-day"])
def test_the_page_renders_to_a_screenshot_that_is_not_blank(which: str, tmp_path: Path) -> None:
    if which == "samples":
        inputs = [str(SAMPLES)]
    else:
        multi_day_logs(tmp_path / "logs")
        inputs = [str(tmp_path / "logs")]
    page = tmp_path / f"{which}.html"
    page_and_json(inputs, page)
    shot = tmp_path / f"{which}.png"  # the test's artifact, under the pytest tmp dir
    share = ink(screenshot(page, shot, tmp_path / "profile"))
    assert 0.03 < share < 0.6, share  # cards, charts and tables drawn; not a solid block
