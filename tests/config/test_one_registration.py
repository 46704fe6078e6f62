"""An extension is one module plus one registration: a new objective and a new launcher, each a class in a
package of their own and one call of the public registration function, are selected by `algo=` and
`launcher=`, composed and validated as the shipped ones, and run: the objective computes the loss of a 1-step
run, the launcher launches a 1-job sweep. The package is found as an installed one is, through its
`harness.extensions` entry point (a dist-info folder on the path), in every process: nothing imports it by hand.
Real processes, Hydra composition and MLflow store; nothing mocked."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]

OBJECTIVE = '''
from harness.algorithms.baselines import PGIS


class HalvedPG(PGIS):
    """Half of pg_is's surrogate; its own metric shows that this class computed the loss."""

    def _surrogate(self, b):
        return 0.5 * super()._surrogate(b)

    def _extra_metrics(self, b):
        return {"halved_tokens": b.adv.new_tensor(float(b.logp.numel() if b.mask is None else b.mask.sum()))}
'''

LAUNCHER = '''
from pathlib import Path

from harness.launchers.base import SequentialLauncher


class StampingLauncher(SequentialLauncher):
    """launcher=local's way of running jobs, leaving a stamp in the sweep folder that it launched them."""

    def launch(self, job_overrides, initial_job_idx):
        returns = super().launch(job_overrides, initial_job_idx)
        folder = Path(self.config.hydra.sweep.dir)
        (folder / "stamp.txt").write_text(f"{type(self).__module__}.{type(self).__name__} {len(returns)}")
        return returns
'''

# the registrations: one call each of the public registration functions; "farm" submits to Slurm as
# launcher=slurm does (its class), a cluster by its entry alone
REGISTRATIONS = '''
from harness.algorithms.params import PGParams
from harness.algorithms.specs import ObjectiveSpec, register_objective
from harness.config.validate import check_profile
from harness.launchers.registry import LauncherEntry, SubmititParams, register_launcher

register_objective(ObjectiveSpec("halved_pg", "harness_ext.halved:HalvedPG", "baseline", PGParams))
register_launcher(LauncherEntry("stamping", "harness_ext.stamping:StampingLauncher", "a test's launcher"))
register_launcher(LauncherEntry("farm", "harness.launchers.submitit_launcher:SubmititLauncher", "a test's cluster",
                                params=SubmititParams, settings={"profile": "test_cluster", "members": 1},
                                hydra_settings={"cluster": "${launcher.cluster}"}, cluster="slurm",
                                checks=(check_profile,)))
'''

# a GPU node without a verl environment: verl's site, on a cluster, reads verl_python from the profile and finds none
GPU_PROFILE = "partition: null\ngpus_per_node: 1\ncpus_per_task: 16\nmem_gb: 2\n"

# how an installed distribution names it (pip writes the same files): the harness imports the module in every
# process, spawned workers and Slurm jobs included, with no import of it by the user
DIST_INFO = {"METADATA": "Metadata-Version: 2.1\nName: harness-ext\nVersion: 0.1\n",
             "entry_points.txt": "[harness.extensions]\nharness_ext = harness_ext\n"}


def _extension(root: Path) -> Path:
    package = root / "harness_ext"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(textwrap.dedent(REGISTRATIONS))
    (package / "halved.py").write_text(textwrap.dedent(OBJECTIVE))
    (package / "stamping.py").write_text(textwrap.dedent(LAUNCHER))
    _dist_info(root, DIST_INFO)
    return root


def _dist_info(root: Path, files) -> None:
    folder = root / "harness_ext-0.1.dist-info"
    folder.mkdir(parents=True)
    for name, text in files.items():
        (folder / name).write_text(text)


def _harness(extension: Path, args, out: Path, **env) -> subprocess.CompletedProcess:
    """`python -m harness <args>` with the extension's folder on the path (as site-packages would hold it)."""
    path = os.pathsep.join([str(extension), str(REPO), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, **env, "PYTHONPATH": path,
           "HARNESS_OUTPUT_ROOT": str(out), "MLFLOW_TRACKING_URI": f"sqlite:///{out}/mlruns.db"}
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=out, env=env, capture_output=True,
                          text=True, timeout=900)


@pytest.mark.e2e  # the command line in real processes: a run and a sweep
def test_a_registered_objective_and_launcher_run(tmp_path, warm_cache):
    extension = _extension(tmp_path / "ext")
    out = tmp_path / "out"
    out.mkdir()
    fast = ["debug=quick", "trainer.steps=1", f"cache_dir={warm_cache}"]

    shown = _harness(extension, ["algo=halved_pg", "algo.is_cap=2.0", "--cfg", "job"], out)
    assert shown.returncode == 0, shown.stderr[-3000:]
    assert yaml.safe_load(shown.stdout)["algo"] == {"name": "halved_pg", "anchor": "rollout", "is_cap": 2.0}

    # the loss computed in a job process of its own (submitit's, the Slurm stand-in), which only the entry point
    # tells about the objective
    run = _harness(extension, ["multirun", *fast, "algo=halved_pg", "launcher=submitit_local", "seed=0"], out)
    assert run.returncode == 0, run.stderr[-3000:]
    assert list(out.glob("multirun/*/*/.submitit/*/*_result.pkl"))  # the job ran in submitit's process
    import mlflow

    client = mlflow.MlflowClient(f"sqlite:///{out}/mlruns.db")
    runs = [r for r in client.search_runs([e.experiment_id for e in client.search_experiments()])
            if "algo.name" in r.data.params]  # the sweep's own run aside
    assert len(runs) == 1 and runs[0].info.status == "FINISHED"
    assert runs[0].data.params["algo.name"] == "halved_pg"
    assert runs[0].data.metrics["objective/halved_tokens"] > 0, sorted(runs[0].data.metrics)

    sweep = _harness(extension, ["multirun", *fast, "launcher=stamping", "algo=halved_pg", "seed=3"], out)
    assert sweep.returncode == 0, sweep.stderr[-3000:]
    [stamp] = out.glob("multirun/*/*/stamp.txt")
    assert stamp.read_text() == "hydra_plugins.harness_launcher.plugins.StampingLauncher 1"
    job = stamp.parent / "0"
    assert (job / "status.txt").read_text().strip() == "FINISHED"
    assert "hydra/launcher: harness_stamping" in (job / ".hydra" / "hydra.yaml").read_text()


def test_a_registered_cluster_launcher_is_a_cluster_everywhere(tmp_path):
    """The entry's cluster reaches the layers below the launchers through `launcher.cluster`: verl's layout takes
    the profile's allocation and its site the profile's verl environment, `--plan` prints the profile and #SBATCH
    lines; an override of `launcher.cluster` is refused."""
    extension = _extension(tmp_path / "ext")
    out = tmp_path / "out"
    (tmp_path / "profiles").mkdir()
    (tmp_path / "profiles" / "gpu_site.yaml").write_text(GPU_PROFILE)
    out.mkdir()

    layout = _harness(extension, ["trainer=verl", "launcher=farm", "--dry-run"], out)
    assert layout.returncode == 2 and layout.stderr.strip() == (
        "harness: error: launcher.gpus_per_node=0 is not allowed with trainer=verl: it needs GPUs (launcher profile "
        "'test_cluster' has none); set launcher.gpus_per_node or a GPU profile")
    profiles = {"HARNESS_LAUNCHER_PROFILES": str(tmp_path / "profiles"), "HARNESS_VERL_PYTHON": ""}
    site = _harness(extension, ["trainer=verl", "launcher=farm", "launcher.profile=gpu_site", "tracking=none",
                                "--dry-run"], out, **profiles)
    assert site.returncode == 2 and site.stderr.startswith(
        "harness: error: trainer.verl.python=None is not allowed on a cluster"), site.stderr
    assert "in the launcher profile 'gpu_site'" in site.stderr

    plan = _harness(extension, ["multirun", "launcher=farm", "seed=0,1", "debug=quick", "--plan"], out)
    assert plan.returncode == 0, plan.stderr[-3000:]
    assert "  profile: test_cluster (launcher=farm's default profile" in plan.stdout
    assert "  submitted as an array of 2 tasks, 2 at a time; each with:" in plan.stdout
    assert "    #SBATCH --array=0-1%2" in plan.stdout

    changed = _harness(extension, ["launcher=local", "launcher.cluster=slurm", "--cfg", "job"], out)
    assert changed.returncode == 2 and changed.stderr.strip() == (
        "harness: error: launcher.cluster='slurm' is not allowed: launcher=local sets it (None); choose the "
        "launcher instead")


def test_a_broken_extension_is_one_line(tmp_path):
    """An entry point whose module cannot be imported: the objectives' listing says so in one line naming it and
    the error, no traceback (what else it costs: tests/config/test_broken_extensions.py)."""
    root = tmp_path / "ext"
    _dist_info(root, {**DIST_INFO, "entry_points.txt": "[harness.extensions]\nbroken = harness_ext_missing.reg\n"})
    (tmp_path / "out").mkdir()
    done = _harness(root, ["algos"], tmp_path / "out")
    assert done.returncode == 0 and "dppo" in done.stdout
    assert done.stderr.splitlines() == [
        "harness: warning: entry point broken = 'harness_ext_missing.reg' of harness-ext (group harness.extensions) "
        "cannot be loaded: ModuleNotFoundError: No module named 'harness_ext_missing'"]


def test_a_registered_name_is_refused_twice(tmp_path):
    """One registration per name: a second objective or launcher under a taken name is one line."""
    probe = ("from harness.algorithms.specs import SPECS, register_objective\n"
             "from harness.launchers.registry import entry_for, register_launcher\n"
             "for register, entry in ((register_objective, SPECS['dppo']),\n"
             "                        (register_launcher, entry_for('slurm'))):\n"
             "    try:\n        register(entry)\n    except ValueError as err:\n        print(err)\n")
    done = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.stdout.splitlines() == ["objective 'dppo' is already registered",
                                        "launcher 'slurm' is already registered"], done.stderr[-2000:]
