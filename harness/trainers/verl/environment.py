"""Is the verl environment a run names there, with the versions the harness generates for?

Asked at submission on the login node (the CLI's cluster checks), in a subprocess of that interpreter: it
must import `verl` at VERL_VERSION and `ray` at a version verl's own metadata accepts. The answer is one
line (ValueError), so a job never waits in the queue only to find `python3` without verl.
"""
from __future__ import annotations

import json
import subprocess
from typing import Dict, Optional

VERL_VERSION = "0.9.1"
PROBE_TIMEOUT_S = 180  # importing verl and ray on a busy login node

PROBE = """import json, sys
from importlib import metadata
out = {"python": sys.version.split()[0]}
for name in ("verl", "ray"):
    try:
        module = __import__(name)
        out[name] = getattr(module, "__version__", None) or metadata.version(name)
    except Exception as err:
        out[name + "_error"] = f"{type(err).__name__}: {err}".splitlines()[0]
try:
    out["ray_requirement"] = next((r.split(";")[0].strip() for r in metadata.requires("verl") or []
                                   if r.startswith("ray") and "extra ==" not in r), None)
except metadata.PackageNotFoundError:
    pass
print(json.dumps(out))
"""


def probe(python: str) -> Dict[str, Optional[str]]:
    """What `python` reports (versions, import errors); ValueError if it cannot run at all."""
    try:
        proc = subprocess.run([python, "-c", PROBE], capture_output=True, text=True, timeout=PROBE_TIMEOUT_S)
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


def check_environment(python: str, source: str) -> None:
    """ValueError (one line, naming where the interpreter was set) unless verl and ray are as expected."""
    from packaging.requirements import Requirement
    from packaging.version import Version

    fix = f"install launchers/verl/requirements-gpu.txt there or name another ({source})"
    found = probe(python)
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


def check_runs(configs) -> None:
    """Each distinct verl environment of the trainer=verl runs, once."""
    from harness.trainers.verl.options import verl_options
    from harness.trainers.verl.site import site

    seen = set()
    for cfg in configs:
        if cfg.trainer.name != "verl":
            continue
        where = site(cfg, verl_options(cfg))
        if where.python and where.python not in seen:
            seen.add(where.python)
            check_environment(where.python, where.python_source)
