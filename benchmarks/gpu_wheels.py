"""Download, on a machine with network, the wheels `bench_gpu_ensemble.py` installs on a GPU machine without one.

    python benchmarks/gpu_wheels.py wheels/ [--arch aarch64]   # then carry wheels/ with the repository to the GPU machine

The GPU machine has Python 3.12 and torch; the benchmark needs what the built-in trainer imports beside torch
(numpy, Hydra and OmegaConf, transformers and its dependencies, tqdm) and setuptools and wheel to install the
harness itself from the repository, at the versions installed here where they are (what the suite was run
with). No MLflow: the benchmark runs with `tracking=none`. pip resolves the dependencies for the target
platform (`--only-binary=:all:`: no source builds, so the folder installs without network)."""
from __future__ import annotations

import argparse
import subprocess
import sys
from importlib import metadata
from pathlib import Path

# distribution -> its requirement in pyproject.toml (used where it is not installed here)
NEEDED = {"numpy": "numpy", "hydra-core": "hydra-core>=1.3.2", "omegaconf": "omegaconf>=2.3",
          "transformers": "transformers>=4.51", "tqdm": "tqdm", "PyYAML": "PyYAML", "setuptools": "setuptools>=68",
          "wheel": "wheel"}
# Hydra's parser runtime is published as a source archive only: it is built here into a wheel (pure Python)
SOURCE_ONLY = {"antlr4-python3-runtime": "antlr4-python3-runtime==4.9.*"}
LIMIT_MIB = 60


def requirements(needed: dict) -> list:
    """Each needed distribution pinned to the version installed here, else its pyproject requirement."""
    pinned = []
    for name, fallback in needed.items():
        try:
            pinned.append(f"{name}=={metadata.version(name)}")
        except metadata.PackageNotFoundError:
            pinned.append(fallback)
    return pinned


ARCHES = ("x86_64", "aarch64")


def download(folder: Path, python_version: str = "3.12", arch: str = "x86_64") -> int:
    """The wheels for Linux on `arch` into `folder` (pure-Python ones are shared: one folder can hold both
    architectures); their total size in bytes."""
    folder.mkdir(parents=True, exist_ok=True)
    pip = [sys.executable, "-m", "pip"]
    subprocess.run([*pip, "wheel", "--no-deps", "-w", str(folder), *requirements(SOURCE_ONLY)], check=True)
    subprocess.run([*pip, "download", "--only-binary=:all:", "--python-version", python_version, "--platform",
                    f"manylinux2014_{arch}", "--platform", f"manylinux_2_28_{arch}", "--implementation", "cp",
                    "--find-links", str(folder), "-d", str(folder), *requirements(NEEDED)], check=True)
    return sum(p.stat().st_size for p in folder.glob("*.whl"))


def missing_for(folder: Path, machine: str) -> list:
    """The distributions in `folder` with binary wheels for other architectures only: none of them installs on
    `machine` (platform.machine(): x86_64, aarch64)."""
    arch = {"arm64": "aarch64", "amd64": "x86_64"}.get(machine.lower(), machine.lower())
    binary: dict = {}
    for wheel in folder.glob("*.whl"):
        parts = wheel.stem.split("-")
        if len(parts) < 5 or parts[-1] == "any":
            continue
        name = parts[0].lower().replace("_", "-")
        binary[name] = binary.get(name, False) or arch in parts[-1]
    return sorted(name for name, fits in binary.items() if not fits)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--python-version", default="3.12", help="the GPU machine's Python (default 3.12)")
    parser.add_argument("--arch", choices=ARCHES, default="x86_64",
                        help="the GPU machine's CPU (aarch64: a GH200); run once per architecture into one folder")
    args = parser.parse_args(argv)
    total = download(args.folder, args.python_version, args.arch)
    wheels = sorted(p.name for p in args.folder.glob("*.whl"))
    print(f"{len(wheels)} wheels, {total / 2**20:.1f} MiB in {args.folder}: {', '.join(wheels)}")
    if total > LIMIT_MIB * 2**20:
        print(f"more than {LIMIT_MIB} MiB: the GPU run carries the folder with the repository", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
