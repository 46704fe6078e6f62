"""A verl run, fully resolved before anything starts: the main_ppo command, the batch script and the two
spec files it reads (objective.json for the loss plugin, data.json for data preparation).

`build_plan` is pure (it reads the validated config and touches no file); `Plan.write` puts the files in
the run folder. The dry run prints `Plan.describe()`; a real run writes and executes the same plan.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional

from omegaconf import OmegaConf

from harness.trainers.verl import layout
from harness.trainers.verl.attempt import Attempt
from harness.trainers.verl.objective import objective_spec
from harness.trainers.verl.options import verl_options
from harness.trainers.verl.overrides import RunPaths, config_name, harness_root, job_env, verl_overrides
from harness.trainers.verl.presets import PROMPT
from harness.trainers.verl.ray_resources import head_cpus
from harness.trainers.verl.site import site
from harness.trainers.verl.script import batch_script, main_ppo_command, render_command


@dataclass(frozen=True)
class Plan:
    paths: RunPaths
    command: List[str]
    script: str
    objective: Dict[str, Any]
    data: Dict[str, Any]

    def write(self) -> Path:
        p = self.paths
        p.verl_dir.mkdir(parents=True, exist_ok=True)
        p.objective.write_text(json.dumps(self.objective, indent=2, sort_keys=True) + "\n")
        p.data_spec.write_text(json.dumps(self.data, indent=2, sort_keys=True) + "\n")
        p.script.write_text(self.script)
        p.script.chmod(0o755)
        return p.script

    def describe(self) -> str:
        command = render_command(self.command)
        return (f"# verl command\n{command}\n\n# batch script ({self.paths.script})\n{self.script}\n"
                f"# objective spec ({self.paths.objective})\n{json.dumps(self.objective, indent=2, sort_keys=True)}\n")


def run_label(cfg, run_dir: Path) -> str:
    return f"{cfg.algo.name}-{run_dir.name}"


def build_plan(cfg, run_dir: Path, resume_from: Optional[str] = None, root: Optional[Path] = None,
               attempt: Attempt = Attempt()) -> Plan:
    """The plan of a validated trainer=verl run whose folder is `run_dir` (`attempt`: which attempt of it)."""
    paths = RunPaths(Path(run_dir))
    root = root or harness_root()
    options = verl_options(cfg)
    label = run_label(cfg, paths.run_dir)
    overrides = verl_overrides(cfg, paths, run_name=label, resume_from=resume_from, root=root, attempt=attempt)
    python = site(cfg, options).python or "python3"  # unnamed on a cluster: refused by validation
    command = main_ppo_command(python, config_name(cfg), overrides)
    shape = layout.cluster(cfg, options)
    script = batch_script(run_name=label, command=command, env=job_env(cfg, paths, root), shape=shape,
                          python=python, data_spec=paths.data_spec, ray_port=options.ray_port,
                          log_hint=f"Metrics: {paths.metrics}", min_cpus=head_cpus(shape))
    algo = OmegaConf.to_container(cfg.algo, resolve=True)
    return Plan(paths=paths, command=command, script=script, objective=objective_spec(algo),
                data=data_spec(cfg, paths))


def data_spec(cfg, paths: RunPaths) -> Dict[str, Any]:
    """What prepare_data.py reads: sources, output files, the prompt and the subset seed."""
    options = verl_options(cfg)
    train, evals, limit = layout.data_sources(cfg, options)

    def sources(items) -> List[Dict[str, Any]]:
        return [{"ref": s.ref, "problem_column": s.problem_column, "answer_column": s.answer_column, "levels": list(s.levels)}
                for s in items]

    return {
        "prompt": PROMPT,
        "seed": int(cfg.dataset.seed),
        "train": {"name": cfg.dataset.name, "sources": sources(train), "max_samples": limit,
                  "out": str(paths.train_file())},
        "eval": {name: {"name": name, "sources": sources(srcs), "max_samples": None, "out": str(paths.eval_file(name))}
                 for name, srcs in evals.items()},
    }
