"""The paper presets: every model, dataset and experiment file composes and validates with trainer=verl,
the verl trainer config lists every option with its default, and local files are checked."""
from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import pytest
import yaml

from harness.launchers.compose import compose
from harness.config.errors import ConfigError
from harness.launchers.compose import validated as validate
from harness.trainers.verl.options import VerlOptions
from harness.trainers.verl.presets import DATASETS, MODELS

CONF = Path(__file__).resolve().parents[2] / "conf"
PAPER_MODELS = ["Qwen3-1.7B-Base", "Qwen3-4B-Base", "Qwen3-8B-Base", "Qwen3-30B-A3B-Base",
                "DeepSeek-R1-Distill-Qwen-1.5B", "Qwen2.5-3B-Instruct"]
# The paper presets run on verl; the toy-scale experiments (toy_*) are the built-in trainer's (tests/findings).
EXPERIMENTS = sorted(p.stem for p in (CONF / "experiment").glob("*.yaml") if "override /trainer: verl" in p.read_text())


@pytest.mark.parametrize("model", PAPER_MODELS)
def test_model_presets_compose_with_a_path(model):
    cfg = validate(compose(["trainer=verl", f"model={model}"]))
    assert cfg.model.name == model and "/" in cfg.model.path
    assert cfg.model.hidden_size % cfg.model.num_heads == 0


@pytest.mark.parametrize("dataset", sorted(DATASETS))
def test_dataset_presets_compose_and_have_aime_evals(dataset):
    cfg = validate(compose(["trainer=verl", f"dataset={dataset}"]))
    assert cfg.dataset.name == dataset
    assert set(DATASETS[dataset].eval) == {"aime2024", "aime2025"}
    assert (CONF / "dataset" / f"{dataset}.yaml").is_file()


def test_only_the_toy_experiments_are_not_verl_presets():
    others = {p.stem for p in (CONF / "experiment").glob("*.yaml")} - set(EXPERIMENTS)
    assert others == {"toy_drift", "toy_lowprob", "toy_mismatch", "toy_onpolicy", "toy_sanity"} and len(EXPERIMENTS) == 10


def test_moe_extras_name_a_shipped_model():
    assert set(MODELS) <= set(PAPER_MODELS)


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_experiments_compose_validate_and_name_their_sources(experiment):
    cfg = validate(compose([f"experiment={experiment}"]))
    assert cfg.trainer.name == "verl" and cfg.model.name in PAPER_MODELS
    assert cfg.trainer.prompts_per_step % cfg.trainer.mini_batches == 0
    text = (CONF / "experiment" / f"{experiment}.yaml").read_text()
    assert "[paper]" in text and "python -m harness" in text  # what comes from the paper, how to run it


def test_paper_settings_of_the_experiments():
    drpo = validate(compose(["experiment=drpo_qwen3_30b_a3b"]))
    assert (drpo.trainer.prompts_per_step, drpo.trainer.prompts_per_step // drpo.trainer.mini_batches,
            drpo.trainer.group_size, drpo.trainer.steps) == (256, 32, 16, 300)
    assert drpo.algo.delta == 12.5 and drpo.trainer.loss_agg == "seq-mean-token-sum-norm"
    assert validate(compose(["experiment=drpo_qwen3_30b_a3b_fp8_e2e"])).precision.name == "fp8_e2e"
    bandpo = validate(compose(["experiment=bandpo_qwen2_5_3b"]))
    assert bandpo.algo.anchor == "recompute" and bandpo.algo.delta == 0.05 and bandpo.algo.band == "kl"
    assert validate(compose(["experiment=bandpo_qwen2_5_3b", "algo=grpo"])).algo.anchor == "recompute"
    dppo = validate(compose(["experiment=dppo_dense_qwen3_8b", "delta=0.2"]))
    assert dppo.algo.delta == 0.2 and dppo.algo.anchor == "rollout" and dppo.trainer.verl.eval_samples == 32


def test_trainer_yaml_lists_every_option_with_its_default():
    data = yaml.safe_load((CONF / "trainer" / "verl.yaml").read_text())["verl"]
    defaults = asdict(VerlOptions())
    assert set(data) == set(defaults)
    assert set(data["data"]) == set(defaults["data"])
    for key, value in data.items():
        if key != "python":  # an ${oc.env:...} interpolation
            assert value == defaults[key], key


def test_validation_writes_the_completed_options_back():
    cfg = validate(compose(["trainer=verl", "trainer.verl.lora_rank=8"]))
    assert cfg.trainer.verl.lora_rank == 8 and cfg.trainer.verl.data.train is None
    assert set(cfg.trainer.verl) == set(asdict(VerlOptions()))


def test_local_checkpoint_and_data_files_are_checked(tmp_path):
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    with pytest.raises(ConfigError, match="has no config.json"):
        validate(compose(["trainer=verl", f"model.path={ckpt}"]))
    (ckpt / "config.json").write_text("{}")
    data = tmp_path / "train.jsonl"
    data.write_text('{"problem": "1+1?", "answer": "2"}\n')
    cfg = validate(compose(["trainer=verl", f"model.path={ckpt}", f"trainer.verl.data.train=[{data}]"]))
    assert cfg.trainer.verl.data.train == [str(data)]
    bad = tmp_path / "train.csv"
    bad.write_text("x")
    with pytest.raises(ConfigError, match="is not allowed: a .parquet, .json or .jsonl"):
        validate(compose(["trainer=verl", f"trainer.verl.data.train=[{bad}]"]))
