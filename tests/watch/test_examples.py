"""examples/kubernetes: the DaemonSet and the vLLM sidecar run `watch` with options it has,
on paths their volumes mount, and are scraped on the port it listens on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.helpers import REPO, run

MANIFESTS = ["daemonset.yaml", "vllm-sidecar.yaml"]


def _watchers(name: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    yaml = pytest.importorskip("yaml", reason="PyYAML is not installed")
    manifest = yaml.safe_load((REPO / "examples" / "kubernetes" / name).read_text())
    template = manifest["spec"]["template"]
    return [(template, c) for c in template["spec"]["containers"] if c["args"][0] == "watch"]


@pytest.mark.parametrize("name", MANIFESTS)
def test_manifest_runs_watch_as_it_is(name: str) -> None:
    (template, container), *others = _watchers(name)
    assert others == []
    args = container["args"]
    known = run(["watch", "--help"]).stdout
    for flag in (a for a in args if a.startswith("--")):
        assert flag in known, flag
    listen = args[args.index("--listen") + 1]
    annotations = template["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true"
    assert listen.endswith(":" + annotations["prometheus.io/port"])
    assert annotations["prometheus.io/path"] == "/metrics"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    followed = [a for a in args[1 : args.index("--listen")] if not a.startswith("--")]
    state = args[args.index("--state") + 1]
    for path in followed:
        assert any(Path(path).is_relative_to(m) for m in mounts), path
    assert any(Path(state).is_relative_to(m) and not mounts[m].get("readOnly") for m in mounts)
