"""Every shipped config composes and validates; shortcuts land on the selected objective. The `algo` and
`launcher` choices are made from their registries (harness/algorithms/specs.py, harness/launchers/registry.py),
the other groups are conf/<group>/*.yaml."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from omegaconf import OmegaConf

from harness.algorithms import default_params, list_objectives, validate_params
from harness.config.overrides import expand_sweep
from harness.launchers.compose import compose, preflight
from harness.launchers.compose import validated as validate
from harness.launchers.registry import launcher_names, launchers

CONF = Path(__file__).resolve().parents[2] / "conf"
GROUPS = ["model", "dataset", "precision", "algo", "trainer", "launcher", "tracking", "experiment", "debug"]


REGISTERED = {"algo": list_objectives, "launcher": launcher_names}


def shipped(group: str):
    if group in REGISTERED:
        return sorted(REGISTERED[group]())
    return sorted(p.stem for p in (CONF / group).glob("*.yaml"))


def backend_for(group: str, choice: str) -> list:
    """Presets of the papers' models and datasets run on verl; everything else composes with the default."""
    if group in REGISTERED:
        return []
    data = yaml.safe_load((CONF / group / f"{choice}.yaml").read_text()) or {}
    from harness.trainers.builtin.tasks import TASKS

    at_scale = (group == "dataset" and data.get("name") not in TASKS) or (group == "model" and data.get("path"))
    return ["trainer=verl"] if at_scale else []


@pytest.mark.parametrize("group,choice", [(g, c) for g in GROUPS for c in shipped(g)])
def test_every_shipped_choice_composes_and_validates(group, choice):
    cfg = validate(compose([*backend_for(group, choice), f"{group}={choice}"]))
    if group in ("model", "dataset", "precision", "trainer"):
        data = yaml.safe_load((CONF / group / f"{choice}.yaml").read_text())
        assert cfg[group].name == data["name"]
    if group in REGISTERED:
        assert cfg[group].name == choice


@pytest.mark.parametrize("entry", launchers(), ids=lambda entry: entry.name)
def test_every_launcher_choice_sets_its_entrys_settings_and_plugin(entry):
    """launcher=<name> is global, as its YAML file was: the run config's `launcher` node and hydra.launcher."""
    from harness.launchers.compose import compose_config, hydra_session

    with hydra_session():
        config = compose_config([f"launcher={entry.name}"])
    assert {key: config.launcher[key] for key in entry.settings} == dict(entry.settings)
    assert config.launcher.cluster == entry.cluster
    node = config.hydra.launcher
    assert node._target_ == f"hydra_plugins.harness_launcher.plugins.{entry.class_name}"

    def meant(value):  # "${launcher.workers}": the run config's value
        return OmegaConf.select(config, value[2:-1]) if str(value).startswith("${") else value

    assert {key: node[key] for key in entry.hydra_settings} == {
        key: meant(value) for key, value in entry.hydra_settings.items()}
    assert config.hydra.runtime.choices["hydra/launcher"] == entry.hydra_config


def test_every_objective_has_a_config_with_its_defaults():
    for name in list_objectives():
        cfg = validate(compose([f"algo={name}"]))
        params = {k: v for k, v in cfg.algo.items() if k != "name"}
        assert params == validate_params(name, {}), name


@pytest.mark.parametrize("algo,key", [("dppo", "delta"), ("drpo", "delta"), ("spo", "eps"),
                                      ("bandpo", "delta"), ("mask_kl", "delta")])
def test_delta_shortcut_sets_the_objectives_threshold(algo, key):
    cfg = validate(compose([f"algo={algo}", "delta=0.1"]))
    assert cfg.algo[key] == pytest.approx(0.1)


def test_null_shortcut_keeps_the_objective_default():
    assert validate(compose(["algo=drpo"])).algo.delta == default_params("drpo")["delta"]
    assert validate(compose(["algo=dppo"])).algo.delta == 0.15  # binary_tv default of ALGORITHMS.md


def test_alpha_and_anchor_shortcuts():
    cfg = validate(compose(["algo=grpo_cliphigher", "alpha=0.2", "anchor=recompute"]))
    assert cfg.algo.relax_alpha == pytest.approx(0.2) and cfg.algo.anchor == "recompute"


def test_sweep_expands_like_hydra():
    jobs = expand_sweep(["algo=dppo,drpo", "delta=0.1,0.15,0.2"])
    assert len(jobs) == 6
    assert ["algo=dppo", "delta=0.1"] in jobs and ["algo=drpo", "delta=0.2"] in jobs
    configs = preflight(["algo=dppo,drpo", "delta=0.1,0.15,0.2"], multirun=True)
    assert sorted((c.algo.name, c.algo.delta) for c in configs) == sorted(
        (a, d) for a in ("dppo", "drpo") for d in (0.1, 0.15, 0.2))


def test_output_root_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("HARNESS_OUTPUT_ROOT", str(tmp_path))
    assert compose([]).output_root == str(tmp_path)
