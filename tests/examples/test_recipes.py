"""examples/ray_scan.py and examples/dask_scan.py, run as a user runs them (Ray and a Dask
LocalCluster on this machine, 2 CPUs): the same summary, events and request tallies as `scan`."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO, SAMPLES, run

ARGS = ["--origin", "fleet", "--format", "json", "--by", "code,file,pid,hour"]


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    """samples/ with two logs gzipped, as a folder of server logs."""
    root = tmp_path / "logs"
    root.mkdir()
    for path in sorted(SAMPLES.iterdir()):
        if path.suffix == ".log" and path.stem.startswith(("vllm", "sglang")):
            (root / f"{path.name}.gz").write_bytes(gzip.compress(path.read_bytes(), mtime=0))
        else:
            shutil.copy2(path, root / path.name)
    return root


def _recipe(
    name: str, inputs: list[str], events: Path, *extra: str
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "DASK_"))}
    env |= {"RAY_USAGE_STATS_ENABLED": "0", "HOME": str(events.parent)}  # nothing in ~/.ray
    command = [
        sys.executable,
        str(REPO / "examples" / name),
        *inputs,
        *ARGS,
        "--events",
        str(events),
    ]
    return subprocess.run(
        [*command, *extra], capture_output=True, text=True, env=env, timeout=180, check=False
    )


def _check_equals_scan(name: str, logs: Path, tmp_path: Path, *extra: str) -> None:
    # A path that is not there is reported by both, in the same place (exit 2).
    inputs = [str(logs), str(logs / "absent.log")]
    local_events, recipe_events = tmp_path / "scan.jsonl", tmp_path / "recipe.jsonl"
    local = run(["scan", *inputs, "-j", "1", *ARGS, "--events", str(local_events)])
    found = _recipe(name, inputs, recipe_events, *extra)
    assert found.returncode == local.exit_code == 2, found.stderr
    doc = json.loads(found.stdout)
    assert doc["totals"]["failures"] > 0 and doc["totals"]["rate"] is not None
    assert doc["totals"]["skipped"] == 1 and len(doc["files"]) == 14
    assert found.stdout == local.stdout  # counts, rates, groups, examples, files: all of it
    assert recipe_events.read_text() == local_events.read_text()  # every event
    tallies = "{}.requests.jsonl"
    assert (tmp_path / tallies.format("recipe")).read_text() == (
        tmp_path / tallies.format("scan")
    ).read_text()


def test_dask_recipe_equals_scan(logs: Path, tmp_path: Path) -> None:
    pytest.importorskip("dask.distributed", reason="dask[distributed] is not installed")
    _check_equals_scan("dask_scan.py", logs, tmp_path, "--workers", "2")


def test_ray_recipe_equals_scan(logs: Path, tmp_path: Path) -> None:
    pytest.importorskip("ray", reason="ray is not installed (pip install 'harmony-doctor[ray]')")
    _check_equals_scan("ray_scan.py", logs, tmp_path, "--num-cpus", "2")


def test_kuberay_manifest_runs_the_ray_recipe_with_the_remote_extra() -> None:
    yaml = pytest.importorskip("yaml", reason="PyYAML is not installed")
    job = yaml.safe_load((REPO / "examples" / "kuberay-rayjob.yaml").read_text())
    assert job["apiVersion"] == "ray.io/v1" and job["kind"] == "RayJob"
    assert job["spec"]["entrypoint"].startswith("python /recipe/ray_scan.py s3://")
    runtime = yaml.safe_load(job["spec"]["runtimeEnvYAML"])
    assert "harmony-doctor[remote]" in runtime["pip"]
    assert not any("SECRET" in k for k in runtime.get("env_vars", {}))  # keys stay in Secrets
    cluster = job["spec"]["rayClusterSpec"]
    pods = [cluster["headGroupSpec"], *cluster["workerGroupSpecs"]]
    for pod in pods:  # every pod reads the bucket: each gets the credentials
        (container,) = pod["template"]["spec"]["containers"]
        assert container["envFrom"][0]["secretRef"]["name"] == "harmony-doctor-s3"
