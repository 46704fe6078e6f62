"""Is the verl environment a run names there, with the versions the harness generates for?

Asked at submission on the login node (the CLI's cluster checks), in a subprocess of that interpreter: it
must import `verl` at VERL_VERSION and `ray` at a version verl's own metadata accepts, and have the packages
the run loads: the training engine's (STRATEGY_PACKAGES) and flash-attn when `trainer.verl.attention` is
flash_attention_2 (neither verl[vllm] nor vLLM installs it; the default, sdpa, is torch's). Those are looked
up, not imported: a login node without a GPU driver may not load their CUDA extensions. The answer is one
line (ValueError), so a job never waits in the queue only to find `python3` without verl.
"""
from __future__ import annotations

import json
import subprocess
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple
from harness.trainers.verl.options import verl_options
from harness.trainers.verl.site import site

VERL_VERSION = "0.9.1"
PROBE_TIMEOUT_S = 180  # importing verl and ray on a busy login node

# package to look up -> its pip name, per trainer.verl.strategy
STRATEGY_PACKAGES = {
    "fsdp": {},
    "megatron": {"megatron.core": "megatron-core", "transformer_engine": "transformer-engine"},
}
# package to look up -> its pip name, per trainer.verl.attention
ATTENTION_PACKAGES = {"sdpa": {}, "flash_attention_2": {"flash_attn": "flash-attn"}}
# package to look up -> its pip name, per trainer.verl.rollout (every engine validation accepts; on a cluster)
ROLLOUT_PACKAGES = {"vllm": {"vllm": "vllm"}}
# The requirements set of the nodes' verl environment per CUDA major (the profile's verl_cuda)
REQUIREMENTS = {13: "launchers/verl/requirements-gpu.txt", 12: "launchers/verl/requirements-gpu-cu12.txt"}
MEGATRON_REQUIREMENTS = "launchers/verl/requirements-gpu-megatron.txt"

PROBE = """import json, sys
from importlib import metadata, util
out = {"python": sys.version.split()[0], "missing": []}
for name in sys.argv[1:]:
    try:
        found = util.find_spec(name) is not None
    except ImportError:
        found = False
    if not found:
        out["missing"].append(name)
for name in ("verl", "ray"):
    try:
        module = __import__(name)
        out[name] = getattr(module, "__version__", None) or metadata.version(name)
    except Exception as err:  # a probe of a broken install (any error on import): reported, not raised
        out[name + "_error"] = f"{type(err).__name__}: {err}".splitlines()[0]
from pathlib import Path
spec = util.find_spec("torch")
if spec is not None and spec.submodule_search_locations:  # torch's CUDA build, read without importing torch
    version = Path(list(spec.submodule_search_locations)[0]) / "version.py"
    for line in (version.read_text().splitlines() if version.is_file() else []):
        if line.startswith("cuda"):
            value = line.split("=", 1)[1].strip().strip(chr(34) + chr(39))
            out["torch_cuda"] = value if value[:1].isdigit() else None  # a CPU build: None
out["versions"] = {}
for pip in ("megatron-core", "transformer-engine-torch", "vllm", "torch"):
    try:
        out["versions"][pip] = metadata.version(pip)
    except metadata.PackageNotFoundError:
        pass
try:
    out["ray_requirement"] = next((r.split(";")[0].strip() for r in metadata.requires("verl") or []
                                   if r.startswith("ray") and "extra ==" not in r), None)
except metadata.PackageNotFoundError:
    pass
print(json.dumps(out))
"""


def probe(python: str, packages: Sequence[str] = ()) -> Dict[str, Any]:
    """What `python` reports (versions, import errors, which of `packages` it lacks); ValueError if it cannot
    run at all."""
    try:
        proc = subprocess.run([python, "-c", PROBE, *packages], capture_output=True, text=True,
                              timeout=PROBE_TIMEOUT_S)
    except FileNotFoundError:
        raise ValueError(f"the verl environment {python!r} does not exist") from None
    except PermissionError:
        raise ValueError(f"the verl environment {python!r} is not executable") from None
    except subprocess.TimeoutExpired:
        raise ValueError(f"the verl environment {python!r} did not answer within {PROBE_TIMEOUT_S} s") from None
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        last = (proc.stderr.strip().splitlines() or [f"exit code {proc.returncode}"])[-1]
        raise ValueError(f"the verl environment {python!r} failed: {last}")
    return json.loads(lines[-1])


def check_environment(python: str, source: str, packages: Optional[Mapping[str, Tuple[str, str]]] = None,
                      cuda: int = 13) -> None:
    """ValueError (one line, naming where the interpreter was set) unless verl and ray are as expected, its torch
    is built for CUDA `cuda` (when it has a CUDA build), and every package of `packages` (module -> (pip name,
    the setting that needs it)) is installed."""
    from packaging.requirements import Requirement
    from packaging.version import Version

    fix = f"install {REQUIREMENTS.get(cuda, REQUIREMENTS[13])} there or name another ({source})"
    packages = packages or {}
    found = probe(python, list(packages))
    torch_cuda = found.get("torch_cuda")
    if torch_cuda and int(torch_cuda.split(".")[0]) != cuda:
        raise ValueError(f"the verl environment {python!r} has a torch built for CUDA {torch_cuda}, the profile's "
                         f"verl_cuda is {cuda}; {fix}, or set verl_cuda: {torch_cuda.split('.')[0]} in the profile")
    for name in ("verl", "ray"):
        if name not in found:
            raise ValueError(f"the verl environment {python!r} cannot import {name} "
                             f"({found.get(name + '_error', 'missing')}); {fix}")
    if found["verl"] != VERL_VERSION:
        raise ValueError(f"the verl environment {python!r} has verl {found['verl']}, the harness generates for verl "
                         f"{VERL_VERSION}; {fix}")
    requirement = found.get("ray_requirement")
    if requirement and Version(found["ray"]) not in Requirement(requirement).specifier:
        raise ValueError(f"the verl environment {python!r} has ray {found['ray']}, verl {VERL_VERSION} needs "
                         f"{requirement}; {fix}")
    if found.get("missing"):
        name = found["missing"][0]
        pip, why = packages[name]
        raise ValueError(f"the verl environment {python!r} lacks {pip} (no module {name}), which {why} needs; {fix}")


def check_runs(configs) -> None:
    """Each distinct verl environment of the trainer=verl runs, once."""
    seen = set()
    for cfg in configs:
        if cfg.trainer.name != "verl":
            continue
        options = verl_options(cfg)
        where = site(cfg, options)
        needs = required_packages(options, where.cluster)
        if where.python and (where.python, tuple(needs)) not in seen:
            seen.add((where.python, tuple(needs)))
            check_environment(where.python, where.python_source, needs, where.cuda)


def required_packages(options, cluster: bool = False) -> Dict[str, Tuple[str, str]]:
    """module -> (its pip name, the setting that needs it) for the run's strategy and attention, and on a cluster
    its rollout engine (the CPU test environment of launcher=local runs has none)."""
    tables = [("strategy", STRATEGY_PACKAGES), ("attention", ATTENTION_PACKAGES)]
    tables += [("rollout", ROLLOUT_PACKAGES)] if cluster else []
    return {module: (pip, f"trainer.verl.{key}={setting}")
            for key, table in tables
            for setting in [getattr(options, key)]
            for module, pip in table.get(setting, {}).items()}


# megatron-core 0.16.1 is tested with TransformerEngine >= 2.9, < 2.12 (its "dev" extra); TransformerEngine's
# torch extension has no wheel (an sdist that compiles against the installed torch with nvcc)
MEGATRON_PINS = {"megatron-core": "0.16.1", "transformer-engine-torch": "2.11.0"}


def megatron_problem(python: str) -> Optional[str]:
    """Why the verl environment `python` cannot run trainer.verl.strategy=megatron (its pins), or None."""
    try:
        found = probe(python, ["megatron.core", "transformer_engine"])
    except ValueError as err:
        return str(err)
    versions = found.get("versions", {})
    for pip, pin in MEGATRON_PINS.items():
        if versions.get(pip) != pin:
            have = f"has {pip} {versions[pip]}" if pip in versions else f"lacks {pip}"
            return (f"trainer.verl.strategy=megatron is not allowed here: the verl environment {python!r} {have}, the "
                    f"harness pins {pin}; install {MEGATRON_REQUIREMENTS} there (TransformerEngine's torch extension "
                    f"builds from source: run it where nvcc matches the environment's CUDA)")
    return None
