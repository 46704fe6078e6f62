"""What `--plan` says about a trainer=verl run on a cluster (a cluster's first day, launchers/verl/README.md):
where the nodes read models and data (hub or stage folder), which requirements set their verl environment is
built from, the network interface NCCL, Gloo and Ray's head address use, how often a timed-out job is requeued;
and the pinned megatron packages of trainer.verl.strategy=megatron, checked in the verl environment (one line,
ValueError, when they are not there: a plan that cannot run is refused at `--plan` time, not in the queue).
"""
from __future__ import annotations

from typing import List

from harness.config.profiles import profile_for
from harness.trainers.verl.environment import REQUIREMENTS, megatron_problem
from harness.trainers.verl.options import verl_options
from harness.trainers.verl.site import on_cluster, site


def verl_plan_lines(specs) -> List[str]:
    """The lines of the first trainer=verl cluster run of `specs` (they share the launcher profile), or []."""
    verl = [s for s in specs if s.trainer.name == "verl" and on_cluster(s)]
    if not verl:
        return []
    checked = set()
    for spec in verl:
        options = verl_options(spec)
        where = site(spec, options)
        if options.strategy == "megatron" and where.python and where.python not in checked:
            checked.add(where.python)
            problem = megatron_problem(where.python)
            if problem:
                raise ValueError(problem)
    spec = verl[0]
    where = site(spec, verl_options(spec))
    profile = profile_for(spec.launcher)
    hub = ("the nodes may download (hub_access: true)" if not where.offline else
           f"offline; models and data from {where.stage_dir}" if where.stage_dir
           else "offline, no stage_dir: local models and data only")
    interface = (f"{where.interface} (the profile's network_interface)" if where.interface else
                 "the interface of the route to the other nodes (found in the job)" if profile.nodes > 1 else
                 "none needed (one node)")
    requirements = REQUIREMENTS.get(where.cuda, "?").rsplit("/", 1)[-1]
    return ["verl:",  # each line within 80 columns under plan's 2-space indent
            f"  environment: {where.python} (CUDA {where.cuda}: {requirements})",
            f"  hub: {hub}",
            f"  network: {interface}",
            f"  requeue: up to {profile.max_num_timeout} time-outs; validation on the first attempt only"]
