"""Download, on a machine with network, the wheels `bench_gpu_ensemble.py` installs on a GPU machine without one.

    python benchmarks/gpu_wheels.py wheels/        # then carry wheels/ with the repository to the GPU machine

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


def download(folder: Path, python_version: str = "3.12", platform: str = "manylinux2014_x86_64") -> int:
    """The wheels into `folder`; their total size in bytes."""
    folder.mkdir(parents=True, exist_ok=True)
    pip = [sys.executable, "-m", "pip"]
    subprocess.run([*pip, "wheel", "--no-deps", "-w", str(folder), *requirements(SOURCE_ONLY)], check=True)
    subprocess.run([*pip, "download", "--only-binary=:all:", "--python-version", python_version, "--platform",
                    platform, "--platform", "manylinux_2_28_x86_64", "--implementation", "cp", "--find-links",
                    str(folder), "-d", str(folder), *requirements(NEEDED)], check=True)
    return sum(p.stat().st_size for p in folder.glob("*.whl"))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--python-version", default="3.12", help="the GPU machine's Python (default 3.12)")
    args = parser.parse_args(argv)
    total = download(args.folder, args.python_version)
    wheels = sorted(p.name for p in args.folder.glob("*.whl"))
    print(f"{len(wheels)} wheels, {total / 2**20:.1f} MiB in {args.folder}: {', '.join(wheels)}")
    if total > LIMIT_MIB * 2**20:
        print(f"more than {LIMIT_MIB} MiB: the GPU run carries the folder with the repository", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
