"""Every package launchers/verl/requirements-gpu.txt pins has a binary wheel for the GPU nodes (CPython 3.11,
manylinux x86_64), so make_gpu_venv.sh installs without compiling anything: pip resolves each pin, without its
dependencies, against the package index for that platform, from wheels only (metadata only, no download of
the wheels themselves). A full resolve of the set is not asked: the index reachable here (and in CI) lacks
some of vLLM's newest dependencies. Skipped, with the reason, when the index cannot be reached."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REQUIREMENTS = Path(__file__).resolve().parents[2] / "launchers" / "verl" / "requirements-gpu.txt"
# manylinux_2_17 (CentOS 7 era) to 2_28 (RHEL 8 era): the glibc range of common GPU cluster images
PLATFORMS = [f"manylinux_2_{minor}_x86_64" for minor in range(17, 29)] + ["manylinux2014_x86_64"]


def pins() -> list:
    return [line.strip() for line in REQUIREMENTS.read_text().splitlines()
            if line.strip() and not line.startswith("#")]


def resolve(requirement: str, target: Path) -> subprocess.CompletedProcess:
    platforms = [arg for platform in PLATFORMS for arg in ("--platform", platform)]
    return subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--ignore-installed",
                           "--no-deps", "--only-binary=:all:", *platforms, "--python-version", "3.11",
                           "--implementation", "cp", "--target", str(target), requirement],
                          capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def index_reachable(tmp_path_factory):
    """pip's index answers for a package that has wheels for every platform (else: skip)."""
    proc = resolve("packaging", tmp_path_factory.mktemp("probe"))
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        pytest.skip(f"the package index is not reachable: {last}")


def test_each_gpu_pin_has_a_wheel_for_the_nodes(index_reachable, tmp_path):
    assert pins() and all("==" in pin for pin in pins())
    missing = {}
    for pin in pins():
        proc = resolve(pin, tmp_path / "target")
        if proc.returncode != 0:
            missing[pin] = [line for line in proc.stderr.splitlines() if line.startswith("ERROR")][-1:]
    assert not missing, f"no wheel for the GPU nodes: {missing}"
