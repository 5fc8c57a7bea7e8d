"""native.py `reuse_large_buffers`: glibc's mallopt reached through the extension when it is
built (ctypes costs a scan's start 2 ms), through ctypes otherwise; the same settings either way."""

from __future__ import annotations

import subprocess
import sys

import pytest

from harmony_doctor import native

_GLIBC = sys.platform.startswith("linux") and "glibc" in " ".join(__import__("platform").libc_ver())


def test_mallopt_is_the_extensions_where_it_is_built() -> None:
    module = native.native_module()
    if module is None:
        pytest.skip("the extension is not built: the ctypes path is tested below")
    assert native._mallopt() is module.mallopt


@pytest.mark.skipif(not _GLIBC, reason="mallopt is glibc's")
@pytest.mark.parametrize("built", [True, False], ids=["extension", "ctypes"])
def test_the_settings_take_and_a_scan_start_loads_no_ctypes_where_built(built: bool) -> None:
    code = (
        "import sys\n"
        "from harmony_doctor import native\n"
        + ("" if built else "native.native_module = lambda: None\n")
        + "print(native.reuse_large_buffers(), 'ctypes' in sys.modules)\n"
    )
    if built and native.native_module() is None:
        pytest.skip("the extension is not built")
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert out == ["True", str(not built)]
