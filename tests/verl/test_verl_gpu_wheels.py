"""Every package launchers/verl/requirements-gpu*.txt pins (the CUDA 13, CUDA 12 and megatron sets; but the one a
line marks as a source build) has a binary wheel for the GPU nodes (CPython 3.11, manylinux x86_64), so
make_gpu_venv.sh installs without compiling anything: pip resolves each pin, without its
dependencies, against the package index for that platform, from wheels only (metadata only, no download of
the wheels themselves). A full resolve of the set is not asked: the index reachable here (and in CI) lacks
some of vLLM's newest dependencies. Skipped, with the reason, when the index cannot be reached."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

VERL = Path(__file__).resolve().parents[2] / "launchers" / "verl"
# each set, with the newest glibc its wheels may need: manylinux_2_17 (CentOS 7 era) to 2_28 (RHEL 8 era), the
# glibc range of common GPU cluster images; the CUDA 12 set's vLLM 0.19.1 needs 2_31 (its file says so)
SETS = {"requirements-gpu.txt": 28, "requirements-gpu-cu12.txt": 31, "requirements-gpu-megatron.txt": 28}
SOURCE_BUILD = "# source build"  # a pin without a wheel, said so on its line (pip compiles it)


def pins(name: str = "requirements-gpu.txt", built: bool = True) -> list:
    lines = [line.strip() for line in (VERL / name).read_text().splitlines() if line.strip() and not line.startswith("#")]
    return [line.split("#")[0].strip() for line in lines if built or SOURCE_BUILD not in line]


def resolve(requirement, target: Path, glibc: int = 28) -> subprocess.CompletedProcess:
    """pip's dry run of one requirement or a list of them (each without dependencies)."""
    requirements = [requirement] if isinstance(requirement, str) else list(requirement)
    platforms = [f"manylinux_2_{minor}_x86_64" for minor in range(17, glibc + 1)] + ["manylinux2014_x86_64"]
    platforms = [arg for platform in platforms for arg in ("--platform", platform)]
    return subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--ignore-installed",
                           "--no-deps", "--only-binary=:all:", *platforms, "--python-version", "3.11",
                           "--implementation", "cp", "--target", str(target), *requirements],
                          capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def index_reachable(tmp_path_factory):
    """pip's index answers for a package that has wheels for every platform (else: skip)."""
    proc = resolve("packaging", tmp_path_factory.mktemp("probe"))
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        pytest.skip(f"the package index is not reachable: {last}")


def test_each_gpu_pin_has_a_wheel_for_the_nodes(index_reachable, tmp_path):
    """Every set's pins, each distinct pin resolved once, for the oldest glibc of the sets that hold it."""
    glibc = {}
    for name, newest in SETS.items():
        assert pins(name) and all("==" in pin for pin in pins(name)), name
        for pin in pins(name, built=False):
            glibc[pin] = min(glibc.get(pin, newest), newest)
    groups = {}
    for pin, newest in glibc.items():
        groups.setdefault(newest, []).append(pin)
    # one pip per glibc level, all its pins at once (without dependencies each is resolved on its own)
    procs = {newest: resolve(group, tmp_path / f"target-{newest}", newest) for newest, group in groups.items()}
    missing = {newest: [line for line in proc.stderr.splitlines() if line.startswith("ERROR")][-1:]
               for newest, proc in procs.items() if proc.returncode != 0}
    assert not missing, f"no wheel for the GPU nodes: {missing}"


def test_the_cuda_12_set_is_the_cuda_13_set_on_a_cuda_12_torch():
    """Same verl, ray and transformers as the CUDA 13 set; torch 2.10.0 (CUDA 12.8 on PyPI) and the vLLM that pins it."""
    cu13, cu12 = (dict(pin.split("==") for pin in pins(name)) for name in ("requirements-gpu.txt", "requirements-gpu-cu12.txt"))
    assert cu12["verl"] == "0.9.1" and cu12["torch"] == "2.10.0" and cu12["vllm"] == "0.19.1"
    for name in ("ray[default]", "transformers", "tensordict", "TransferQueue"):
        assert cu12[name] == cu13[name], name
