"""The CLI's cache of composed configs: a hit prints exactly what Hydra prints, anything the composition reads
changes the key, what a hit could not reproduce is not stored, and validation always runs."""
from __future__ import annotations

import shutil
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

import harness.conf
from harness.cli import _hydra_args, _plain_cfg_job_args, _run_hydra, run_cli
from harness.config import compose as compose_module
from harness.config import compose_cache


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A fresh cache folder, the key's per-process part recomputed, and a counter of compositions (Hydra's,
    and those done without Hydra)."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("HARNESS_CONFIG_CACHE", str(folder))
    monkeypatch.setenv("HARNESS_OUTPUT_ROOT", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(compose_cache, "_TREE", [])
    calls = []
    real = compose_module._compose_with_hydra
    monkeypatch.setattr(compose_module, "_compose_with_hydra", lambda o: calls.append(list(o)) or real(o))
    fast = compose_module.compose_without_hydra

    def counted_fast(overrides):
        cfg = fast(overrides)
        if cfg is not None:
            calls.append(list(overrides))
        return cfg

    monkeypatch.setattr(compose_module, "compose_without_hydra", counted_fast)
    return SimpleNamespace(glob=folder.glob, calls=calls)


def cfg_job(capsys, *overrides):
    code = run_cli(["--cfg", "job", *overrides])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("argv", [
    ["--cfg", "job"], ["-c", "job"], ["--cfg", "job", "algo=spo", "delta=3"], ["algo=spo", "+x.y='a b'", "--cfg", "job"],
    ["-c", "job", "~debug", "++seed=2"],
])
def test_plain_cfg_job_is_parsed_as_hydra_parses_it(argv):
    assert vars(_plain_cfg_job_args(argv)) == vars(_hydra_args(argv))


@pytest.mark.parametrize("argv", [
    [], ["algo=spo"], ["--cfg", "hydra"], ["--cfg", "job", "--resolve"], ["--cfg", "job", "-p", "algo"],
    ["--cfg=job"], ["a=1", "--cfg", "job", "b=2"], ["--cfg", "job", "-m", "seed=1,2"], ["--info"],
])
def test_anything_else_goes_to_hydras_parser(argv):
    assert _plain_cfg_job_args(argv) is None


@pytest.mark.parametrize("overrides", [[], ["algo=spo", "delta=3"], ["launcher=local_parallel", "debug=quick"],
                                       ["tracking=none", "+extra.note='a b, c'", "trainer.lr=1e-3"]])
def test_a_hit_prints_what_hydra_prints_without_composing(overrides, cache, capsys):
    first = cfg_job(capsys, *overrides)
    assert first[0] == 0 and len(cache.calls) == 1 and len(list(cache.glob("*.pkl"))) == 1
    assert cfg_job(capsys, *overrides) == first
    assert len(cache.calls) == 1
    _run_hydra(["--cfg", "job", *overrides])
    assert capsys.readouterr().out == first[1]


def test_overrides_and_the_environment_they_read_are_in_the_key(cache, monkeypatch):
    names = {compose_cache.key([]), compose_cache.key(["seed=1"]), compose_cache.key(["seed=2"]),
             compose_cache.key(["seed=1", "algo=spo"]), compose_cache.key(["algo=spo", "seed=1"])}
    assert len(names) == 5
    read = ["+extra.home=${oc.env:SOME_VAR}"]
    monkeypatch.setenv("SOME_VAR", "a")
    before = compose_cache.key(read)
    monkeypatch.setenv("SOME_VAR", "b")
    assert compose_cache.key(read) != before
    base = compose_cache.key([])  # the conf tree reads HARNESS_OUTPUT_ROOT through oc.env
    monkeypatch.setenv("HARNESS_OUTPUT_ROOT", "/elsewhere")
    assert compose_cache.key([]) != base


def fresh_key(monkeypatch, overrides=()):
    monkeypatch.setattr(compose_cache, "_TREE", [])
    return compose_cache.key(list(overrides))


def test_conf_files_installed_distributions_and_plugins_are_in_the_key(cache, tmp_path, monkeypatch):
    base = fresh_key(monkeypatch)
    assert fresh_key(monkeypatch) == base
    conf = tmp_path / "conf"
    shutil.copytree(Path(harness.conf.__file__).parent, conf, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(harness.conf, "__file__", str(conf / "__init__.py"))
    copied = fresh_key(monkeypatch)
    (conf / "model" / "tiny_qwen3.yaml").write_text((conf / "model" / "tiny_qwen3.yaml").read_text() + "\n")
    edited = fresh_key(monkeypatch)
    (conf / "model" / "tiny_qwen4.yaml").write_text("name: tiny_qwen4\n")
    added = fresh_key(monkeypatch)
    assert len({base, copied, edited, added}) == 4

    site = tmp_path / "lib" / "site-packages"
    site.mkdir(parents=True)
    monkeypatch.setattr(sys, "path", [*sys.path, str(site)])
    listed = fresh_key(monkeypatch)
    (site / "hydra_core-9.9.dist-info").mkdir()
    installed = fresh_key(monkeypatch)
    (site / "hydra_plugins" / "some_plugin").mkdir(parents=True)
    (site / "hydra_plugins" / "some_plugin" / "__init__.py").write_text("")
    plugin = fresh_key(monkeypatch)
    assert len({added, listed, installed, plugin}) == 4


def test_search_paths_and_interpolated_defaults_lists_are_not_cached(cache, tmp_path, monkeypatch):
    assert compose_cache.key(["hydra.searchpath=[file://somewhere]"]) is None
    conf = tmp_path / "conf"
    shutil.copytree(Path(harness.conf.__file__).parent, conf, ignore=shutil.ignore_patterns("__pycache__"))
    (conf / "experiment" / "from_env.yaml").write_text("defaults:\n  - /model: ${oc.env:SOME_MODEL}\n")
    monkeypatch.setattr(harness.conf, "__file__", str(conf / "__init__.py"))
    assert fresh_key(monkeypatch) is None


def test_what_a_hit_could_not_reproduce_is_not_cached(cache, capsys):
    code, out, _ = cfg_job(capsys, "+extra.when=${now:%Y}")  # Hydra's resolver: registered by Hydra only
    assert code == 0 and "${now:%Y}" in out
    assert cfg_job(capsys, "+extra.when=${now:%Y}")[0] == 0
    assert len(cache.calls) == 2 and not list(cache.glob("*.pkl"))


def test_a_composition_that_warns_is_not_cached_and_still_warns(cache, monkeypatch):
    real = compose_module._compose_with_hydra

    def warning_composition(overrides):
        import warnings

        warnings.warn("deprecated thing", UserWarning)
        return real(overrides)

    monkeypatch.setattr(compose_module, "_compose_with_hydra", warning_composition)
    with pytest.warns(UserWarning, match="deprecated thing"):  # `+` overrides are composed by Hydra
        compose_module.compose(["+extra.seed=4"], cache=True)
    assert not list(cache.glob("*.pkl"))


def test_unreadable_entries_and_off(cache, capsys, monkeypatch):
    first = cfg_job(capsys)
    (entry,) = cache.glob("*.pkl")
    entry.write_bytes(b"not a pickle")
    assert cfg_job(capsys) == first and len(cache.calls) == 2
    assert cfg_job(capsys) == first and len(cache.calls) == 2  # replaced by a good one
    monkeypatch.setenv("HARNESS_CONFIG_CACHE", "off")
    assert compose_cache.key([]) is None


def test_validation_still_runs_on_a_hit(cache, capsys, tmp_path, monkeypatch):
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    (profiles / "mine.yaml").write_text("partition: cpu\n")
    monkeypatch.setenv("HARNESS_LAUNCHER_PROFILES", str(profiles))
    assert cfg_job(capsys, "launcher=slurm", "launcher.profile=mine")[0] == 0
    (profiles / "mine.yaml").unlink()
    code, out, err = cfg_job(capsys, "launcher=slurm", "launcher.profile=mine")
    assert code == 2 and not out and "launcher.profile='mine' is not a known profile" in err
    assert len(cache.calls) == 1
