"""`--plan`: what a run or sweep would do, once every job is composed and validated, instead of doing it.

For any launcher: the jobs, those already FINISHED (skip-finished would skip them: harness/launchers/
skip_finished.py; or FINISHED in the stopped sweep the command would continue: harness/sweeps/continued.py), how
the others group into ensembles and on how many worker processes (the launcher's own `layout`, what its launch
line says), an estimated time (harness/launchers/step_cost.py says whether it is measured or rough), for a
launcher on a cluster (`launcher.cluster`, from its entry) its profile, and for one submitting to Slurm the
`#SBATCH` lines each array task gets from the profile. Nothing is started, no folder is made, nothing is
written to MLflow (its store is only read, and only if it exists)."""
from __future__ import annotations

import heapq
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Sequence

from omegaconf import OmegaConf

from harness.launchers.compose import Job
from harness.config.profiles import PROFILE_ENV, chosen_profile, profile_for
from harness.launchers.base import HarnessLauncher
from harness.launchers.gpu_workers import check_devices
from harness.launchers.launch_line import grouping
from harness.launchers.registry import plugin_class_named
from harness.launchers.sbatch_lines import sbatch_lines
from harness.launchers.skip_finished import finished_twin
from harness.launchers.step_cost import ROUGH_START_S, step_costs
from harness.launchers.sweep_progress import clock
from harness.infra.secrets import scrub
from harness.tracking.store import experiment_name, output_root, tracking_uri
from harness.trainers.checkpoint import checkpoint_paths, checkpoint_step
from harness.trainers.ensemble.grouping import shape_key
from harness.trainers.verl.cluster_plan import verl_plan_lines
from harness.infra.refused import Refused

DEFAULT_PROFILE = "test_cluster"  # launcher=slurm's launcher.profile (harness/launchers/registry.py)


@dataclass
class JobPlan:
    steps: int  # training steps left (0: skipped)
    done: str = ""  # why it is skipped, in words ("" : it trains)
    resumes: bool = False


def _job_plans(launcher, jobs: Sequence[Job], continued: Optional[Path]) -> List[JobPlan]:
    plans = []
    for index, job in enumerate(jobs):
        steps = int(OmegaConf.select(job.spec, "trainer.steps") or 0)
        if continued is not None:
            own = launcher.job_folder(job.overrides, index)
            folder = continued / own.name if own is not None else None
            status = folder / "status.txt" if folder is not None else None
            if status is not None and status.is_file() and status.read_text().strip() == "FINISHED":
                plans.append(JobPlan(0, "FINISHED in the stopped sweep"))
                continue
            if folder is not None and checkpoint_paths(folder)[0].is_file():
                plans.append(JobPlan(max(0, steps - checkpoint_step(str(folder))), resumes=True))
                continue
        twin = finished_twin(job.spec)
        plans.append(JobPlan(0, f"FINISHED as mlflow run {twin}") if twin else JobPlan(steps))
    return plans


def _makespan(durations: List[float], workers: int) -> float:
    """The longest a worker is busy when each group goes to the first free worker, longest groups first."""
    busy = [0.0] * max(1, workers)
    for duration in sorted(durations, reverse=True):
        heapq.heapreplace(busy, busy[0] + duration)
    return max(busy)


def _skipped_line(jobs: Sequence[Job], plans: List[JobPlan]) -> str:
    in_folder = sum(p.done.endswith("stopped sweep") for p in plans)
    twins = sum(p.done.startswith("FINISHED as") for p in plans)
    head = f"already FINISHED: {in_folder + twins} of {len(plans)}"
    parts = [f"{in_folder} in the stopped sweep it continues"] if in_folder else []
    spec = jobs[0].spec
    if spec.get("force"):
        parts.append("identical configs not looked up: --force reruns them")
    elif spec.tracking.backend != "mlflow":
        parts.append(f"identical configs not looked up: tracking.backend={spec.tracking.backend}")
    else:
        versions = "any code version" if spec.get("reuse_across_versions") else "this code version"
        where = f"{tracking_uri(spec)}, experiment {experiment_name(spec)}, by {versions}"
        parts.append(f"{twins} as an identical config in {where}: skip-finished skips them, --force reruns them"
                     if twins else f"no identical config FINISHED in {where}")
    return f"{head} ({'; '.join(parts)})"


def _estimate(jobs: Sequence[Job], plans: List[JobPlan], layout) -> List[str]:
    trains = [i for i, p in enumerate(plans) if p.steps > 0]
    if not trains:
        return ["estimated time: none (nothing to train)"]
    costs = step_costs([jobs[i].spec for i in trains], output_root(jobs[0].spec))
    cost = {i: costs[shape_key(jobs[i].spec)].seconds for i in trains}
    durations = []
    for group in layout.groups:
        run_steps = sum(plans[i].steps * cost[i] for i in group if i in cost)
        if run_steps:
            durations.append(ROUGH_START_S + run_steps)
    total = _makespan(durations, layout.workers)
    run_steps = sum(plans[i].steps for i in trains)
    lines = [f"estimated time: about {clock(total)} ({run_steps} run-steps, {layout.workers} group"
             f"{'s' if layout.workers != 1 else ''} at a time; start-up {ROUGH_START_S:.0f} s per group, a rough "
             "constant)"]
    return lines + [f"  step cost {c.seconds:.3g} s per run-step: {c.source}"
                    for c in sorted(set(costs.values()), key=lambda c: c.source)]


def _cluster_lines(launcher, jobs: Sequence[Job], layout) -> List[str]:
    config = launcher.config
    name = str(OmegaConf.select(config, "launcher.name") or "")
    cluster = OmegaConf.select(config, "launcher.cluster")  # the launcher's entry says (registry.py)
    if cluster is None:
        return []
    profile = profile_for(config.launcher)
    named = OmegaConf.select(config, "launcher.profile")
    chosen = chosen_profile(config.launcher) or DEFAULT_PROFILE
    default = (f" (launcher={name}'s default profile: the Slurm test cluster's; choose yours with "
               "launcher.profile=<name>)" if chosen == DEFAULT_PROFILE and named == DEFAULT_PROFILE else
               f" (from ${PROFILE_ENV})" if not named else "")
    each = (f"{profile.cpus_per_task} CPUs, {profile.mem_gb} GB, {profile.gpus_per_node or 0} GPUs per node, "
            f"{profile.nodes} node{'s' if profile.nodes != 1 else ''}, time limit {profile.timeout_min} min")
    lines = [f"profile: {chosen}{default}", f"each job: {each}", _tracking_line(jobs[0].spec)]
    if cluster == "slurm":
        tasks = len(layout.groups)
        lines.append(f"submitted as {'an array of ' + str(tasks) + ' tasks' if tasks > 1 else 'one job'}, "
                     f"{layout.workers} at a time; each with:")
        folder = Path(str(OmegaConf.select(config, "hydra.sweep.dir") or "<sweep folder>"))
        job_name = str(OmegaConf.select(config, "hydra.job.name") or "job")
        lines += [f"  {line}" for line in sbatch_lines(profile, job_name, tasks, folder)]
    try:  # trainer=verl: its site, network and requeue; refused when its megatron pins are missing
        return lines + verl_plan_lines([job.spec for job in jobs])
    except ValueError as err:
        raise Refused(str(err).splitlines()[0]) from None


def _tracking_line(spec) -> str:
    """Where the runs on the cluster's nodes send their tracking."""
    if spec.tracking.backend != "mlflow":
        return f"tracking: none from the nodes (tracking.backend={spec.tracking.backend}): each run's folder holds it"
    uri = scrub(tracking_uri(spec))
    where = ("a file, which every node must see on a shared filesystem; tracking=server for many nodes"
             if uri.startswith(("sqlite:", "file:")) or "://" not in uri else "an address the nodes must reach")
    return f"tracking: the nodes log to {uri}: {where}"


def plan_lines(launcher, jobs: Sequence[Job], continued: Optional[Path] = None,
               folder: Optional[Path] = None) -> List[str]:
    """The plan of `jobs` as `launcher` (set up with their compositions) would run them; `continued`: the stopped
    sweep the command would continue, if any; `folder`: where they would run, when known (a named sweep's)."""
    pairs = [(job.overrides, index) for index, job in enumerate(jobs)]
    layout = launcher.layout(pairs)
    plans = _job_plans(launcher, jobs, continued)
    name = OmegaConf.select(launcher.config, "launcher.name") or type(launcher).__name__
    to_train = [p for p in plans if p.steps > 0]
    resumed = sum(p.resumes for p in to_train)
    lines = [f"jobs: {len(jobs)} (launcher={name})", _skipped_line(jobs, plans),
             f"to train: {len(to_train)} run{'s' if len(to_train) != 1 else ''}"
             + (f", {resumed} resuming from their checkpoints" if resumed else ""),
             _ensembles_line(layout, plans)]
    root = output_root(jobs[0].spec)
    lines.append(f"folder: continues the stopped sweep {continued}" if continued is not None else
                 f"folder: {folder}" if folder is not None else f"folder: a new folder under {root}")
    return lines + _estimate(jobs, plans, layout) + _cluster_lines(launcher, jobs, layout)


def _ensembles_line(layout, plans: List[JobPlan]) -> str:
    """How the runs that train group (the launcher's groups without the members skip-finished drops)."""
    groups = [kept for kept in ([i for i in group if plans[i].steps > 0] for group in layout.groups) if kept]
    if not groups:
        return "ensembles: none (nothing to train)"
    return f"ensembles: {grouping(groups)}{'' if layout.where.startswith(',') else ' '}{layout.where}"


def launcher_for(jobs: Sequence[Job]) -> HarnessLauncher:
    """The launcher Hydra would make for `jobs` (composed elsewhere, e.g. a named sweep's grid), holding them."""
    node = OmegaConf.to_container(jobs[0].config.hydra.launcher, resolve=True)
    launcher = plugin_class_named(str(node.pop("_target_")).rsplit(".", 1)[-1])(**node)
    launcher.config = jobs[0].config
    launcher.prepared = {tuple(job.overrides): job for job in jobs}
    return launcher


def print_plan(title: str, launcher, jobs: Sequence[Job], continued: Optional[Path] = None,
               folder: Optional[Path] = None) -> None:
    check_devices(jobs)  # runs that would all fail at their start are refused, not estimated
    body = plan_lines(launcher, jobs, continued, folder)
    print("\n".join([f"plan: {title} (--plan: nothing started, nothing written)", *(f"  {b}" for b in body)]),
          flush=True)
