"""Where the jobs of a sweep run, selected by `launcher=<name>` (conf/launcher/<name>.yaml):
local (Hydra's basic launcher, in this process), local_parallel, submitit_local, slurm.
Hydra finds the launcher classes through `hydra_plugins.harness_launcher`."""
from __future__ import annotations

LAUNCHERS = ("local", "local_parallel", "submitit_local", "slurm")
