"""`harness stage` and offline clusters: a run whose model or data is neither staged nor reachable is refused
at submission; once staged, the run reads the shared copies with the hub offline.

Without network here, the hub side is a local mirror (`--from`, laid out as <org>/<name>) holding a tiny
model and tiny datasets under the preset's hub ids; local sources are staged by copy.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.launchers.compose import compose
from harness.config.errors import ConfigError
from harness.launchers.compose import validated as validate
from harness.trainers.verl.plan import build_plan

HUB_DATA = ("open-r1/DAPO-Math-17k-Processed", "HuggingFaceH4/aime_2024", "MathArena/aime_2025")


def make_mirror(root: Path) -> Path:
    mirror = root / "mirror"
    model = mirror / "Qwen" / "Qwen3-1.7B-Base"
    model.mkdir(parents=True)
    (model / "config.json").write_text(json.dumps({"model_type": "qwen3", "hidden_size": 64, "num_hidden_layers": 2}))
    (model / "model.safetensors").write_bytes(b"\0" * 128)
    for repo in HUB_DATA:
        folder = mirror / repo / "data"
        folder.mkdir(parents=True)
        (folder / "train.jsonl").write_text(json.dumps({"problem": "1+1?", "answer": "2"}) + "\n")
    return mirror


def make_profile(root: Path, **fields) -> Path:
    folder = root / "profiles"
    folder.mkdir(exist_ok=True)
    lines = ["partition: null", "gpus_per_node: 1", "cpus_per_task: 16", "mem_gb: 2"]  # 16: what verl reserves
    lines += [f"{k}: {json.dumps(v)}" for k, v in fields.items()]
    (folder / "offline_site.yaml").write_text("\n".join(lines) + "\n")
    return folder


RUN = ("trainer=verl", "algo=drpo", "launcher=slurm", "launcher.profile=offline_site", "tracking=none")


def test_offline_profile_refuses_unstaged_then_runs_from_the_stage(run_harness, tmp_path):
    stage = tmp_path / "stage"
    profiles = make_profile(tmp_path, offline=True, stage_dir=str(stage), verl_python="/opt/verl/bin/python")
    env = {"HARNESS_LAUNCHER_PROFILES": str(profiles)}

    refused = run_harness(*RUN, "--dry-run", env=env)
    assert refused.returncode == 2 and refused.stdout == ""
    line, = refused.stderr.strip().splitlines()
    assert "model.path: 'Qwen/Qwen3-1.7B-Base' is neither staged nor reachable" in line
    assert "launcher profile 'offline_site' is offline" in line and "harness stage" in line

    staged = run_harness("stage", "--from", str(make_mirror(tmp_path)), *RUN, env=env)
    assert staged.returncode == 0, staged.stderr
    manifest = json.loads((stage / "manifest.json").read_text())
    assert manifest["models"] == {"Qwen/Qwen3-1.7B-Base": "models/Qwen--Qwen3-1.7B-Base"}
    assert sorted(manifest["datasets"]) == sorted(HUB_DATA)
    assert (stage / "models" / "Qwen--Qwen3-1.7B-Base" / "config.json").is_file()
    assert (stage / "datasets" / "MathArena--aime_2025" / "data" / "train.jsonl").is_file()

    again = run_harness("stage", "--from", str(tmp_path / "nowhere-needed"), *RUN, env=env)
    assert again.returncode == 2 and "is not a folder" in again.stderr  # bad input before anything happens
    again = run_harness("stage", "--from", str(tmp_path / "mirror"), *RUN, env=env)
    assert again.returncode == 0 and again.stdout.count("already staged") == 4

    dry = run_harness(*RUN, "--dry-run", env=env)
    assert dry.returncode == 0, dry.stderr
    assert f"actor_rollout_ref.model.path={stage}/models/Qwen--Qwen3-1.7B-Base" in dry.stdout
    for variable in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
        assert f"export {variable}=1" in dry.stdout


def test_staged_sources_are_what_the_job_reads(run_harness, tmp_path, monkeypatch):
    stage = tmp_path / "stage"
    profiles = make_profile(tmp_path, offline=True, stage_dir=str(stage), verl_python="/opt/verl/bin/python")
    monkeypatch.setenv("HARNESS_LAUNCHER_PROFILES", str(profiles))
    assert run_harness("stage", "--from", str(make_mirror(tmp_path)), *RUN,
                       env={"HARNESS_LAUNCHER_PROFILES": str(profiles)}).returncode == 0
    plan = build_plan(validate(compose(list(RUN))), tmp_path / "run")
    train = plan.data["train"]["sources"][0]
    assert train["ref"] == f"hf:{stage}/datasets/open-r1--DAPO-Math-17k-Processed:en@train"
    assert train["problem_column"] == "prompt"  # the preset's columns travel with the staged copy
    assert plan.data["eval"]["aime2024"]["sources"][0]["ref"] == f"hf:{stage}/datasets/HuggingFaceH4--aime_2024@train"


def test_local_sources_are_staged_by_copy_and_online_runs_keep_the_hub(run_harness, tmp_path, monkeypatch):
    model = tmp_path / "checkpoints" / "my-model"
    model.mkdir(parents=True)
    (model / "config.json").write_text("{}")
    data = tmp_path / "train.jsonl"
    data.write_text(json.dumps({"problem": "2+2?", "answer": "4"}) + "\n")
    stage = tmp_path / "stage"
    local_run = ["trainer=verl", f"model.path={model}", f"trainer.verl.data.train=[{data}]",
                 f"trainer.verl.data.eval={{held_out: [{data}]}}", "tracking=none"]
    staged = run_harness("stage", "--to", str(stage), *local_run)
    assert staged.returncode == 0, staged.stderr
    manifest = json.loads((stage / "manifest.json").read_text())
    assert manifest == {"models": {str(model): "models/checkpoints--my-model"},
                        "datasets": {str(data): f"datasets/{tmp_path.name}--train.jsonl/train.jsonl"}}

    monkeypatch.setenv("HARNESS_STAGE_DIR", str(stage))
    plan = build_plan(validate(compose(local_run)), tmp_path / "run")
    assert f"actor_rollout_ref.model.path={stage}/models/checkpoints--my-model" in plan.command
    assert plan.data["train"]["sources"][0]["ref"] == str(stage / manifest["datasets"][str(data)])
    assert "export HF_HUB_OFFLINE=1" in plan.script  # everything it reads is staged

    monkeypatch.delenv("HARNESS_STAGE_DIR")
    hub_run = validate(compose(["trainer=verl"]))  # nothing staged, a machine with network: hub as before
    assert "HF_HUB_OFFLINE" not in build_plan(hub_run, tmp_path / "run2").script


def test_stage_refuses_what_it_cannot_stage(run_harness, tmp_path):
    builtin = run_harness("stage", "--to", str(tmp_path / "s"), "trainer=builtin")
    assert builtin.returncode == 2 and "harness stage` stages trainer=verl runs" in builtin.stderr
    nowhere = run_harness("stage", "trainer=verl")
    assert nowhere.returncode == 2 and "no stage folder" in nowhere.stderr
    missing = run_harness("stage", "--to", str(tmp_path / "s"), "--from", str(tmp_path), "trainer=verl")
    assert missing.returncode == 1 and "is not in the mirror" in missing.stderr


def test_cluster_run_must_name_its_verl_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_LAUNCHER_PROFILES", str(make_profile(tmp_path)))
    monkeypatch.delenv("HARNESS_VERL_PYTHON", raising=False)
    with pytest.raises(ConfigError, match=r"trainer.verl.python=None is not allowed on a cluster: name the verl "
                                          r"environment of the nodes \(verl_python: <venv or python> in the launcher "
                                          r"profile 'offline_site'"):
        validate(compose(list(RUN)))
