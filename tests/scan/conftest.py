"""The scan tests' shared fixture: a folder of small vLLM logs with three failures."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scan.vllm_logs import build_logs


@pytest.fixture
def logs_dir(tmp_path: Path) -> Path:
    build_logs(tmp_path)
    return tmp_path
