"""Typed schema of one run. Hydra merges the YAML groups in conf/ onto these dataclasses, so a value of
the wrong type or an unknown key fails at composition. Ranges are checked in `validate.py`.

The `algo` node is left untyped here: its fields depend on the objective and are validated against
`harness.algorithms.specs` (one source of truth for objective parameters and defaults)."""
from __future__ import annotations

from dataclasses import MISSING as MISSING_FIELD, dataclass, field, fields, make_dataclass
from typing import Any, Dict, List, Optional, get_type_hints

from omegaconf import MISSING

from harness.algorithms.specs import default_params, list_objectives


@dataclass
class ModelConfig:
    name: str = MISSING
    hidden_size: int = 64
    num_layers: int = 2
    num_heads: int = 4
    num_kv_heads: int = 2
    intermediate_size: int = 256
    max_position_embeddings: int = 64
    tie_word_embeddings: bool = True
    path: Optional[str] = None  # a local HF checkpoint; None builds the architecture from this config


@dataclass
class DatasetConfig:
    name: str = MISSING  # task registry key: arithmetic | sorting
    difficulty: int = 4
    ops: str = "+"
    eval_size: int = 128
    seed: int = 1234  # fixes the eval set and the train/eval split, independent of the run seed
    train_size: Optional[int] = None  # a fixed pool of this many train problems (drawn with `seed`); None: unlimited


@dataclass
class PrecisionConfig:
    name: str = MISSING  # fp32 | bf16 | fp16 | fp8_rollout | fp8_e2e
    # Emulation strength: the rollout weights are w + mismatch_scale·(q(w) − w), q = this precision's
    # rounding. 1 is the real rounding; > 1 magnifies the training-inference mismatch a tiny model shows.
    mismatch_scale: float = 1.0
    # How the rollout engine takes the trainer's weights at each step: full (a fresh copy, rounded) or delta
    # (its own rounded copy moved by the trainer's change since the last sync: rounding errors accumulate).
    weight_sync: str = "full"


@dataclass
class WarmStartConfig:
    """Supervised pre-training that makes the initial policy a 'base model' solving some problems. Shared
    by every RL seed (its own seed), like one base checkpoint, and cached on disk by config hash."""
    seed: int = 0
    steps: int = 1000  # at most; stops earlier once target_accuracy is reached
    batch_size: int = 64
    lr: float = 2e-3
    target_accuracy: Optional[float] = 0.3  # sampled (T=1) accuracy on train problems; None: run all steps


@dataclass
class TrainerConfig:
    name: str = MISSING
    steps: int = 60
    prompts_per_step: int = 16
    group_size: int = 8
    mini_batches: int = 2  # optimizer steps per rollout batch: >1 makes the policy stale w.r.t. its rollouts
    lr: float = 3e-4
    weight_decay: float = 0.0
    grad_clip: float = 1.0
    temperature: float = 1.0
    max_new_tokens: Optional[int] = None  # None: the task's longest answer + <eos>
    advantage: str = "grpo"
    loss_agg: str = "token-mean"
    topk: int = 20  # rollout top-K log-probs, requested only by Top-K objectives
    eval_every: int = 10
    checkpoint_every: int = 10
    checkpoint_background: bool = True  # write checkpoints on a thread: the loop pays for a copy of the state
    torch_threads: int = 1
    device: str = "auto"  # auto (CUDA when present, else CPU) | cpu | cuda | cuda:N: where the built-in trainer computes
    progress: bool = True
    resume: Optional[str] = None  # a run folder or checkpoint file to continue from
    branch_from: Optional[str] = None  # a run folder whose checkpoint starts a new run (harness/trainers/resume.py)
    warmstart: WarmStartConfig = field(default_factory=WarmStartConfig)
    verl: Dict[str, Any] = field(default_factory=dict)  # trainer=verl only: harness/trainers/verl/options.py


@dataclass
class ClusterResources:
    """What a Slurm / submitit job asks for: a cluster profile (launchers/profiles/*.yaml) sets these, and
    `launcher.<field>` overrides one for a run. Defined here only; `LauncherConfig` derives its fields."""
    partition: Optional[str] = None
    account: Optional[str] = None
    qos: Optional[str] = None
    nodes: int = 1
    gpus_per_node: int = 0
    cpus_per_task: int = 1
    mem_gb: float = 4
    timeout_min: int = 60
    array_parallelism: int = 64
    # false: the job's command runs once per allocation, not once per node through srun (what a
    # multi-node verl job needs: its batch script starts Ray on the other nodes itself)
    use_srun: bool = True
    # trainer=verl on this cluster (launchers/verl/README.md): the verl environment on the nodes (its python
    # or its venv folder), the shared folder `harness stage` fills, whether the nodes lack network, and the
    # memory of one GPU in GB (the memory preflight)
    verl_python: Optional[str] = None
    stage_dir: Optional[str] = None
    offline: bool = False
    gpu_memory_gb: Optional[float] = None
    # trainer=verl, a cluster's first day (launchers/verl/README.md): whether the nodes may download from the
    # Hugging Face hub (false: offline, everything staged), the CUDA major of the nodes' verl environment (13:
    # requirements-gpu.txt, driver >= 580; 12: requirements-gpu-cu12.txt, driver 535-570; null: 13), the network
    # interface of NCCL, Gloo and Ray's head address (null: the route's to the other nodes, found in the job),
    # and how often submitit requeues a job that hit its time limit
    hub_access: bool = False
    verl_cuda: Optional[int] = None
    network_interface: Optional[str] = None
    max_num_timeout: int = 60
    # the nodes are this machine (launchers/slurm_test_cluster): a tracking store at 127.0.0.1 reaches them
    allow_loopback_tracking: bool = False
    setup: List[str] = field(default_factory=list)  # shell lines run before each job (module load, ...)
    additional_parameters: Dict[str, Any] = field(default_factory=dict)  # extra #SBATCH options


@dataclass
class _LauncherSettings:
    name: str = MISSING
    # set by the launcher's entry (harness/launchers/registry.py): "slurm" or "local" for a launcher whose jobs
    # go to a cluster with a launcher profile's resources (submitit's executor), None for one running them here
    cluster: Optional[str] = None
    workers: Optional[int] = None  # local_parallel: worker processes (None: one per core)
    # local/local_parallel/submitit: built-in runs of one shape train together, at most this many per
    # process (None: as many as fit in memory; 1: every run alone)
    members: Optional[int] = None
    profile: Optional[str] = None  # slurm/submitit_local: a cluster profile of launchers/profiles/
    detach: bool = False  # slurm: return right after submission (`python -m harness status` follows up)


def _optional(tp: Any) -> Any:
    return tp if type(None) in getattr(tp, "__args__", ()) else Optional[tp]


def _override_field(f) -> tuple:
    """A ClusterResources field as a launcher override: None (the profile's value) for a scalar; an empty
    container for `setup`/`additional_parameters`, so that `launcher.additional_parameters.constraint=a100`
    can add a key (OmegaConf cannot merge a key into a None-valued dict field)."""
    tp = get_type_hints(ClusterResources)[f.name]
    if f.default_factory is not MISSING_FIELD:
        return f.name, tp, field(default_factory=f.default_factory)
    return f.name, _optional(tp), field(default=None)


# The launcher node: its own settings, then every ClusterResources field as an override of the profile's
# value (None or empty: the profile's value; additional_parameters are added to the profile's).
LauncherConfig = make_dataclass("LauncherConfig", [_override_field(f) for f in fields(ClusterResources)],
                                bases=(_LauncherSettings,))
LauncherConfig.__module__ = __name__  # found by pickle (a worker or Slurm job gets the config pickled)


@dataclass
class TrackingConfig:
    backend: str = "mlflow"  # mlflow | none
    uri: Optional[str] = None  # None: sqlite:///<output_root>/mlruns.db
    experiment: Optional[str] = None  # None: the `experiment_name` of the run


@dataclass
class SweeperConfig:
    name: str = "basic"  # basic (Hydra's grid) | optuna


@dataclass
class OptunaTrialConfig:
    """Set by the Optuna sweeper on each job: the trial the run reports intermediate accuracy to."""
    storage: Optional[str] = None
    study: Optional[str] = None
    trial_id: Optional[int] = None
    prune: bool = True  # the pruner is not stored with the study, so the sweeper passes its settings
    n_startup_trials: int = 2
    n_warmup_steps: int = 0


@dataclass
class RunConfig:
    model: ModelConfig = MISSING
    dataset: DatasetConfig = MISSING
    precision: PrecisionConfig = MISSING
    algo: Dict[str, Any] = MISSING
    trainer: TrainerConfig = MISSING
    launcher: LauncherConfig = MISSING
    tracking: TrackingConfig = MISSING
    sweeper: SweeperConfig = field(default_factory=SweeperConfig)
    optuna: OptunaTrialConfig = field(default_factory=OptunaTrialConfig)
    # Shortcuts mapped onto whichever objective is selected; None keeps the objective's default.
    delta: Optional[float] = None
    alpha: Optional[float] = None
    anchor: Optional[str] = None
    seed: int = 0
    force: bool = False  # rerun jobs whose identical config already FINISHED (default: skip them)
    reuse_across_versions: bool = False  # skip also jobs FINISHED by other code (default: same code version only)
    experiment_name: str = "harness"
    output_root: str = "."
    cache_dir: Optional[str] = None  # None: <output_root>/.harness/cache


@dataclass
class GridSweeperConf:
    _target_: str = "hydra_plugins.harness_launcher.plugins.GridSweeper"
    max_batch_size: Optional[int] = None
    params: Optional[Dict[str, str]] = None


@dataclass
class OptunaSweeperConf:
    _target_: str = "hydra_plugins.harness_launcher.plugins.OptunaSweeper"
    params: Dict[str, str] = field(default_factory=dict)  # key -> float(lo,hi[,log]) | int(..) | choice(..)
    n_trials: int = 20
    n_jobs: int = 1  # trials launched at once (use with launcher=local_parallel or slurm)
    direction: str = "maximize"
    metric: str = "eval/accuracy"
    storage: Optional[str] = None  # None: sqlite:///<output_root>/optuna.db
    study_name: Optional[str] = None  # None: experiment_name
    sampler_seed: int = 0
    pruner: Dict[str, Any] = field(default_factory=lambda: {"enabled": True, "n_startup_trials": 2,
                                                            "n_warmup_steps": 0})


# Schemas the primary config's defaults list names (config.yaml: `- run_schema`)
ROOT_SCHEMAS = {"run_schema": RunConfig}


def register_schemas() -> None:
    """Register the schemas, and each objective's `algo` choice (its spec's defaults), with Hydra's ConfigStore
    (idempotent). The launchers' configs come with them (harness.launchers.registry.store_configs)."""
    from hydra.core.config_store import ConfigStore

    cs = ConfigStore.instance()
    for name, node in ROOT_SCHEMAS.items():
        cs.store(name=name, node=node)
    for name in list_objectives():
        cs.store(group="algo", name=name, node={"name": name, **default_params(name)})
    cs.store(group="hydra/sweeper", name="harness_basic", node=GridSweeperConf)
    cs.store(group="hydra/sweeper", name="harness_optuna", node=OptunaSweeperConf)
