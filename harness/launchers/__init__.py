"""Orchestration: one job (`job.py`: open its tracking run, train, end truthfully), its results, the checks
before anything starts (`preflight.py`, `folder_claims.py`), the sweep's parent run (`sweep_parent.py`) and the
launchers that run jobs, alone or as ensembles, selected by `launcher=<name>`: local, local_parallel,
submitit_local, slurm, each one entry of `registry.py` (its config, its checks; Hydra finds its class through
`hydra_plugins.harness_launcher.plugins`)."""
