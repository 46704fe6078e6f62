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
    hub = ("the nodes may download from the hub (hub_access: true)" if not where.offline else
           f"offline (HF_HUB_OFFLINE=1); models and data from the stage folder {where.stage_dir}" if where.stage_dir
           else "offline (HF_HUB_OFFLINE=1), no stage_dir: only local models and data")
    interface = (f"{where.interface} (the profile's network_interface: NCCL_SOCKET_IFNAME, GLOO_SOCKET_IFNAME, "
                 f"Ray's head address)" if where.interface else
                 "the head's route to the other nodes (`ip route get <node>` in the job; set network_interface "
                 "in the profile to name one)" if profile.nodes > 1 else "none needed (one node)")
    return ["verl:",
            f"  environment: {where.python} ({REQUIREMENTS.get(where.cuda, '?')}, CUDA {where.cuda})",
            f"  hub: {hub}",
            f"  network interface: {interface}",
            f"  requeue: up to {profile.max_num_timeout} time-outs (max_num_timeout); validation before "
            f"training only on the first attempt"]
