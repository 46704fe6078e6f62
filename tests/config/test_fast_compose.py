"""Composing without Hydra gives Hydra's config, node types and flags included, or declines (None)."""
from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from omegaconf import DictConfig, ListConfig, open_dict

from harness.config import fast_compose
from harness.config.compose import _compose_with_hydra, compose, expand_sweep
from harness.config.fast_compose import compose_without_hydra
from harness.config.validate import ConfigError
from harness.sweeps.spec import available_sweeps, load_sweep

CONF = Path(__file__).resolve().parents[2] / "conf"
GROUPS = sorted(p.name for p in CONF.iterdir() if p.is_dir() and not p.name.startswith("_"))


def signature(node, path: str = "", out=None) -> list:
    """Every node's path, class, metadata (object and reference type, optional, key, flags) and raw value."""
    out = [] if out is None else out
    md = node._metadata
    leaf = not isinstance(node, (DictConfig, ListConfig))
    out.append((path, type(node).__name__, getattr(md, "object_type", None), md.ref_type, md.optional, md.key,
                dict(md.flags or {}), node._value() if leaf else None))
    if leaf or node._is_missing() or node._is_none() or node._is_interpolation():
        return out
    keys = node.keys() if isinstance(node, DictConfig) else range(len(node))
    for key in keys:
        signature(node._get_node(key), f"{path}.{key}", out)
    return out


def hydra_job_config(overrides) -> DictConfig:
    cfg = _compose_with_hydra(overrides)
    with open_dict(cfg):
        del cfg["hydra"]
    return cfg


def assert_same_as_hydra(overrides):
    fast = compose_without_hydra(overrides)
    assert fast is not None, f"declined {overrides}"
    assert signature(fast) == signature(hydra_job_config(overrides)), overrides


def options(group: str):
    return sorted(p.stem for p in (CONF / group).glob("*.yaml"))


@pytest.mark.parametrize("override", [None] + [f"{g}={o}" for g in GROUPS for o in options(g)])
def test_every_option_of_every_group_as_hydra_composes_it(override):
    assert_same_as_hydra([override] if override else [])


@pytest.mark.parametrize("experiment", options("experiment"))
def test_config_overrides_and_their_precedence(experiment):
    # experiments override trainer/model/dataset/...; trainer=verl overrides model/dataset/precision itself
    # (`override /model@_global_.model`); the command line wins over both, a later defaults entry over an earlier
    assert_same_as_hydra([f"experiment={experiment}", "trainer=verl"])
    assert_same_as_hydra([f"experiment={experiment}", "model=tiny_qwen3", "precision=fp32", "debug=quick"])


def outcome(compose_fn, overrides):
    try:
        return "ok", signature(compose_fn(overrides))
    except ConfigError as err:
        return "error", str(err)


def leaves(node, prefix=""):
    for key, value in node.items():
        if isinstance(value, dict):
            yield from leaves(value, f"{prefix}{key}.")
        elif not isinstance(value, (list, str)) or (isinstance(value, str) and "${" not in value):
            yield f"{prefix}{key}", value


def spelling(rng, value) -> str:
    """A command-line spelling of a value of this type, sometimes of the wrong type."""
    if rng.random() < 0.15:
        return rng.choice(["abc", "1.5", "7", "null", "true"])
    if isinstance(value, bool):
        return rng.choice(["true", "False", "TRUE", "false"])
    if isinstance(value, int):
        return rng.choice([str(value + 1), f"+{value}", "1_0"])
    if isinstance(value, float):
        return rng.choice([repr(value * 2), "1e-3", ".5", "2."])
    if value is None:
        return rng.choice(["null", "3", "some_name"])
    return rng.choice([value, "other-name_1.2", "./somewhere"])


def test_random_combinations_compose_as_hydra_composes_them():
    from omegaconf import OmegaConf

    rng = random.Random(5)
    keys = list(leaves(OmegaConf.to_container(hydra_job_config([]), resolve=False)))
    handled = 0
    for _ in range(40):
        overrides = [f"{g}={rng.choice(options(g))}" for g in rng.sample(GROUPS, rng.randint(1, 4))]
        overrides += [f"{k}={spelling(rng, v)}" for k, v in rng.sample(keys, rng.randint(0, 3))]
        rng.shuffle(overrides)
        handled += compose_without_hydra(overrides) is not None
        assert outcome(compose, overrides) == outcome(hydra_job_config, overrides), overrides
    assert handled >= 20  # most of them are composed without Hydra, so the comparison means something


def test_null_choices_and_plain_values_typed_as_hydra_types_them():
    assert_same_as_hydra(["trainer=verl", "model=Qwen3-4B-Base"])
    values = ["seed=+3", "trainer.steps=1_000", "trainer.lr=1e-3", "trainer.lr=.5", "trainer.lr=2.", "trainer.lr=3",
              "delta=0.1", "alpha=1E-2", "anchor=recompute", "model.path=/data/ckpt-1.5B/v2", "model.path=null",
              "dataset.train_size=NULL", "model.tie_word_embeddings=False", "trainer.temperature=1",
              "experiment_name=my-exp_1.2", "output_root=./out", "output_root=.", "output_root=..", "output_root=.inf"]
    for value in values:
        assert_same_as_hydra(["algo=drpo", value])


@pytest.mark.parametrize("text", [
    "0", "-0", "+3", "007", "1_000", "10", "1.5", ".5", "5.", "1.0_0", "1e5", "1E-2", "2.5e+3", ".5e3", "1e",
    "true", "False", "TRUE", "null", "Null", "abc", "a.b", "a..b", "abc1.5", "x-1e5", "/x/y", "./o", ".", "..",
    "_x", ".inf", "inf", "nan", "1_", "0x10", "5abc", "-abc", "a b", "'q'", "${x}", "[1]",
])
def test_plain_values_are_read_as_hydras_override_grammar_reads_them(text):
    from hydra.core.override_parser.overrides_parser import OverridesParser

    got = fast_compose._value(text)
    if got is fast_compose._OUT_OF_SCOPE:
        return
    expected = OverridesParser.create().parse_override(f"k={text}").value()
    assert (type(got), got) == (type(expected), expected)


def test_every_named_sweeps_jobs_as_hydra_composes_them():
    jobs = set()
    for name in available_sweeps():
        spec = load_sweep(name)
        for grid in spec.grid_overrides():
            for job in expand_sweep([f"experiment_name={spec.experiment_name}", *spec.overrides, *grid]):
                jobs.add(tuple(o for o in job if not o.startswith("seed=")))  # seeds only set a value
    assert len(jobs) > 50
    for job in sorted(jobs):
        assert_same_as_hydra(list(job))


@pytest.mark.parametrize("overrides", [
    ["+extra=1"], ["++seed=1"], ["~debug"], ["model.name='a b'"], ["trainer.steps=${seed}"], ["algo.x=[1,2]"],
    ["hydra.run.dir=x"], ["hydra/launcher=basic"], ["trainer.stepz=3"], ["algo=nope"], ["seed=1", "seed=2"],
    ["delta=inf"], ["trainer.lr=1e"], ["dataset.ops=+"], ["model@x=tiny_qwen3"], ["launcher/profile=x"],
    ["trainer.steps=three"], ["experiment=null"], ["experiment_name=caf\u00e9"],
])
def test_declines_what_it_does_not_handle_and_hydra_still_answers(overrides):
    assert compose_without_hydra(overrides) is None
    try:
        expected = ("ok", signature(hydra_job_config(overrides)))
    except ConfigError as err:
        expected = ("error", str(err))
    try:
        got = ("ok", signature(compose(overrides)))
    except ConfigError as err:
        got = ("error", str(err))
    assert got == expected


def test_a_plugin_adding_search_paths_sends_every_composition_to_hydra(tmp_path, monkeypatch):
    plugins = tmp_path / "hydra_plugins" / "site_conf"
    plugins.mkdir(parents=True)
    (plugins / "__init__.py").write_text("from hydra.plugins.search_path_plugin import SearchPathPlugin\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    fast_compose._tree.cache_clear()
    try:
        assert compose_without_hydra([]) is None
    finally:
        monkeypatch.undo()
        fast_compose._tree.cache_clear()
    assert compose_without_hydra([]) is not None


def test_an_edited_config_file_is_read_again(tmp_path, monkeypatch):
    conf = tmp_path / "conf"
    shutil.copytree(CONF, conf, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(fast_compose, "_tree", lambda: fast_compose._Tree(str(conf)))
    assert compose_without_hydra(["algo=drpo"]).trainer.steps == 60
    builtin = conf / "trainer" / "builtin.yaml"
    builtin.write_text(builtin.read_text().replace("steps: 60", "steps: 61"))
    assert compose_without_hydra(["algo=drpo"]).trainer.steps == 61
    (conf / "algo" / "drpo.yaml").unlink()
    assert compose_without_hydra(["algo=drpo"]) is None


def test_cold_cfg_job_imports_no_hydra():
    code = ("import sys; from harness.cli import run_cli; code = run_cli(['--cfg', 'job', 'algo=drpo']); "
            "print('HYDRA' if any(m == 'hydra' or m.startswith('hydra.') for m in sys.modules) else 'NO-HYDRA', code)")
    env = {**os.environ, "HARNESS_CONFIG_CACHE": "off"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    assert "name: drpo" in out
    assert out.strip().endswith("NO-HYDRA 0")
