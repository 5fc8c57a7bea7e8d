"""The wheel `make wheel` builds carries the Rust core: installed into a fresh virtual
environment, with no cargo on PATH, `harmony-doctor` runs on the native core and `make demo`'s
commands work from it (issue 37, item 6).

The fresh environment gets the wheel and nothing else from the network: its dependencies are
this test run's own (a `.pth` line naming this environment's site-packages, which adds the
folder without running the editable install's hooks in it).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

from tests.helpers import REPO

MAKEFILE = REPO / "Makefile"
# The make demo recipe's commands: `$(BIN)/harmony-doctor ARGS || [ $$? -eq 1 ]`.
DEMO = re.compile(r"^\t\$\(BIN\)/harmony-doctor (?P<args>[^|\n]+?)\s*(?:\|\||$)", re.MULTILINE)


def _demo_commands() -> list[list[str]]:
    recipe = MAKEFILE.read_text().split("\ndemo:", 1)[1].split("\n\n", 1)[0]
    return [m["args"].split() for m in DEMO.finditer(recipe)]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bin folder of a fresh environment with the wheel installed."""
    if shutil.which("cargo") is None:
        pytest.skip("cargo is not installed: no wheel with the Rust core can be built here")
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    dist = tmp_path_factory.mktemp("dist")
    built = subprocess.run(
        ["make", "-s", "-C", str(REPO), "wheel", f"DIST={dist}"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    wheels = sorted(dist.glob("*.whl"))
    assert [w.name.split("-")[2:4] for w in wheels] == [["cp311", "abi3"]], wheels
    assert re.search(r"-manylinux_2_\d+_x86_64\.whl$", wheels[0].name), wheels[0].name
    assert sorted(dist.glob("*.tar.gz")), "make wheel builds the sdist the wheel comes from"
    with zipfile.ZipFile(wheels[0]) as wheel:
        names = wheel.namelist()
        metadata = wheel.read(next(n for n in names if n.endswith(".dist-info/METADATA")))
    assert b"\nLicense-Expression: Apache-2.0\n" in metadata
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names), names
    assert [n for n in names if n.endswith(".so")] == ["harmony_doctor/_native.abi3.so"], names

    env_dir = tmp_path_factory.mktemp("fresh") / "env"
    venv.create(env_dir, with_pip=True)
    bin_dir = env_dir / "bin"
    subprocess.run(
        [bin_dir / "python", "-m", "pip", "install", "-q", "--no-index", "--no-deps", wheels[0]],
        check=True,
    )
    purelib = Path(
        subprocess.check_output(
            [bin_dir / "python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            text=True,
        ).strip()
    )
    (purelib / "_test_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return bin_dir


def _run(bin_dir: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HARMONY_DOCTOR", "PYTHON"))}
    env["PATH"] = f"{bin_dir}:/usr/bin:/bin"
    env["NO_COLOR"] = "1"
    assert shutil.which("cargo", path=env["PATH"]) is None, "cargo must not be reachable"
    return subprocess.run(
        [str(bin_dir / args[0]), *args[1:]], capture_output=True, text=True, cwd=cwd, env=env
    )


def test_the_wheel_runs_the_native_core_without_cargo(installed: Path, tmp_path: Path) -> None:
    where = _run(
        installed,
        "python",
        "-c",
        "import harmony_doctor; print(harmony_doctor.__file__)",
        cwd=tmp_path,
    )
    assert where.returncode == 0, where.stderr
    assert Path(where.stdout.strip()).is_relative_to(installed.parent), where.stdout
    version = _run(installed, "harmony-doctor", "--version", cwd=tmp_path)
    assert version.returncode == 0, version.stderr
    assert "scan core: native" in version.stdout, version.stdout
    assert sys.version_info >= (3, 11)


def test_make_demo_commands_work_from_the_wheel(installed: Path, tmp_path: Path) -> None:
    commands = _demo_commands()
    assert len(commands) >= 3, commands
    for args in commands:
        # The recipe names samples relative to the repository: run there, from the wheel.
        done = _run(installed, "harmony-doctor", *args, cwd=REPO)
        assert done.returncode in (0, 1), (args, done.stderr)
        assert "Traceback" not in done.stderr, done.stderr
        assert done.stdout.strip(), args
        if args[0] in ("scan", "explain"):
            assert re.search(r"\bHD\d{3}\b", done.stdout), (args, done.stdout[:2000])
