"""trainer=verl runs that cannot work are refused at composition, with one line naming key, value and what
is allowed (ConfigError from harness.config.validate; exit code 2 from the CLI, before any submission)."""
from __future__ import annotations

import subprocess
import sys

import pytest

from harness.launchers.compose import compose
from harness.config.errors import ConfigError
from harness.launchers.compose import validated as validate

CASES = [
    (["model.path=/nonexistent/Qwen3-8B-Base"], "model.path='/nonexistent/Qwen3-8B-Base' does not exist"),
    (["model=tiny_qwen3"], "model.path=None is not allowed with trainer=verl"),
    (["model.path=not a hub id"], "neither an existing folder nor a hub id"),
    (["trainer.verl.data.train=[/nonexistent/dapo.parquet]"],
     "trainer.verl.data.train: '/nonexistent/dapo.parquet' does not exist (dataset=dapo_math)"),
    (["trainer.verl.data.eval={aime2024: [/no/aime.jsonl]}"], "trainer.verl.data.eval.aime2024: '/no/aime.jsonl'"),
    (["dataset=sorting"], "dataset='sorting' has no data for trainer=verl"),
    (["precision.weight_sync=delta"], "precision.weight_sync=delta is not allowed with trainer=verl"),
    (["algo=dppo", "algo.divergence=topk_tv"], "algo.divergence='topk_tv' is not allowed with trainer=verl"),
    (["trainer.mini_batches=3"], "trainer.mini_batches=3 is not allowed: must divide trainer.prompts_per_step=128"),
    (["trainer.prompts_per_step=12", "trainer.mini_batches=4", "trainer.group_size=2"],
     "a mini-batch of 6 sequences (prompts_per_step/mini_batches x group_size) must split evenly over 8"),
    (["trainer.verl.micro_batch_per_gpu=5"], "trainer.verl.micro_batch_per_gpu=5 is not allowed: must divide the 32"),
    (["trainer.verl.rollout_tensor_parallel=3"],
     "trainer.verl.rollout_tensor_parallel=3 is not allowed: must divide the GPUs per node (8"),
    (["model=DeepSeek-R1-Distill-Qwen-1.5B", "trainer.verl.rollout_tensor_parallel=8"],
     "must divide its 12 attention heads"),
    (["launcher=slurm"], "launcher.gpus_per_node=0 is not allowed with trainer=verl"),
    (["launcher=slurm", "launcher.profile=gpu_node8", "launcher.hub_access=true", "launcher.nodes=2", "launcher.use_srun=true"],
     "launcher.nodes=2 is not allowed with trainer=verl yet"),
    (["launcher=slurm", "launcher.profile=gpu_node8", "launcher.hub_access=true", "trainer.verl.rollout_tensor_parallel=16"],
     "must divide the GPUs per node (8, launcher profile 'gpu_node8')"),
    (["launcher=slurm", "launcher.profile=gpu_node", "launcher.hub_access=true", "launcher.gpus_per_node=8"],
     "launcher.cpus_per_task=16 is not allowed with trainer=verl on 8 GPU(s) per node: verl 0.9.1 reserves 34 CPUs "
     "in Ray on the head node"),
    (["launcher=slurm", "launcher.profile=gpu_node", "launcher.hub_access=true", "launcher.cpus_per_task=8"],
     "set launcher.cpus_per_task=13 or more (launcher profile 'gpu_node')"),
    (["experiment=dppo_moe_qwen3_30b", "launcher=slurm", "launcher.profile=gpu_node8", "launcher.hub_access=true", "launcher.nodes=2",
      "launcher.mem_gb=64"], "launcher.mem_gb=64 does not fit trainer.verl.offload=true for model=Qwen3-30B-A3B-Base"),
    (["precision=fp8_e2e"], "precision=fp8_e2e is not allowed with trainer.verl.strategy=fsdp"),
    (["precision=fp32"], "precision=fp32 is not allowed with trainer=verl: runs are set up for 16-bit compute only "
     "(verl's mixed precision, vLLM's dtype; flash_attention_2 computes in fp16/bf16 only); one of bf16, fp16, "
     "fp8_rollout, fp8_e2e"),
    (["trainer.verl.attention=flash_attention_3"], "trainer.verl.attention='flash_attention_3' is not allowed: one of "
     "sdpa, flash_attention_2"),
    (["precision=fp32", "trainer.verl.strategy=megatron"], "precision=fp32 is not allowed with trainer=verl"),
    (["trainer.verl.router_replay=R3"], "router_replay='R3' is not allowed for model=Qwen3-1.7B-Base"),
    (["model=Qwen3-30B-A3B-Base", "trainer.verl.router_replay=R3"],
     "router_replay='R3' is not allowed with strategy=fsdp"),
    (["model=Qwen3-30B-A3B-Base", "trainer.verl.strategy=megatron", "trainer.verl.router_replay=R2"],
     "router_replay='R2' is not allowed with anchor=rollout"),
    (["trainer.verl.strategy=deepspeed"], "trainer.verl.strategy='deepspeed' is not allowed: one of fsdp, megatron"),
    (["trainer.verl.expert_parallel=2"], "trainer.verl.expert_parallel=2 is not allowed: only with"),
    (["trainer.verl.lora_rank=1024"], "trainer.verl.lora_rank=1024 is not allowed"),
    (["trainer.max_new_tokens=null"], "trainer.max_new_tokens=None is not allowed"),
    (["trainer.max_new_tokens=32000"], "exceeds model=Qwen3-1.7B-Base's context of 32768 tokens"),
    (["trainer.verl.max_tokens_per_gpu=4096"],
     "trainer.verl.max_tokens_per_gpu=4096 is not allowed: a micro-batch must hold one full sequence, "
     "trainer.verl.max_prompt_length + trainer.max_new_tokens = 6144"),
    (["trainer.verl.gpu_memory_utilization=1.5"], "trainer.verl.gpu_memory_utilization=1.5 is not allowed: in (0, 1]"),
    (["trainer.verl.keep_checkpoints=0"],
     "trainer.verl.keep_checkpoints=0 is not allowed: null (keep every checkpoint) or an integer >= 1"),
    (["trainer.verl.keep_checkpoints=true"], "trainer.verl.keep_checkpoints=True has the wrong type: expected"),
    (["trainer.verl.extra=[not-an-override]"], "trainer.verl.extra='not-an-override' is not allowed"),
    (["trainer.verl.micro_batch_per_gpu=four"], "trainer.verl.micro_batch_per_gpu='four' has the wrong type: expected int"),
    (["trainer.verl.bogus=1"], "unknown key 'trainer.verl.bogus'"),
    (["+trainer.verl.data.bogus=1"], "unknown key 'trainer.verl.data.bogus'; allowed: answer_column, eval,"),
]


@pytest.mark.parametrize("overrides,message", CASES, ids=[c[1][:40] for c in CASES])
def test_refused_with_one_line(overrides, message):
    with pytest.raises(ConfigError) as err:
        validate(compose(["trainer=verl", *overrides]))
    text = str(err.value)
    assert message in text
    assert "\n" not in text


def test_the_builtin_trainer_refuses_the_papers_datasets():
    with pytest.raises(ConfigError, match="dataset.name='dapo_math'.*trainer=verl"):
        validate(compose(["model=Qwen3-8B-Base", "dataset=dapo_math"]))


def test_the_cli_refuses_before_anything_starts(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "harness", "trainer=verl", "model.path=/nonexistent/ckpt",
                           "launcher=slurm", "launcher.profile=gpu_node", "launcher.hub_access=true"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300, env={"HARNESS_OUTPUT_ROOT": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "harness: error: model.path='/nonexistent/ckpt' does not exist (model=Qwen3-1.7B-Base)"]
    assert not list(tmp_path.iterdir())  # no run folder, no tracking store
