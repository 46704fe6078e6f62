"""Where the jobs of a sweep run, selected by `launcher=<name>` (conf/launcher/<name>.yaml):
local (Hydra's basic launcher, in this process), local_parallel, submitit_local, slurm.
Hydra finds the launcher classes through `hydra_plugins.harness_launcher`."""
from __future__ import annotations

from harness.config.names import LAUNCHERS  # noqa: F401  (the names live with the other names a user types)
