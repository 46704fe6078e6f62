"""Orchestration: one job (`job.py`: open its tracking run, train, end truthfully), its results, the checks
before anything starts (`preflight.py`, `folder_claims.py`), the sweep's parent run (`sweep_parent.py`) and the
launchers that run jobs, alone or as ensembles, selected by `launcher=<name>` (conf/launcher/<name>.yaml):
local, local_parallel, submitit_local, slurm. Hydra finds the launcher classes through
`hydra_plugins.harness_launcher.plugins`."""
from __future__ import annotations

from harness.config.names import LAUNCHERS  # noqa: F401  (the names live with the other names a user types)
