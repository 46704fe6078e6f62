"""Named sweep files are input like any other: a name is looked up in the sweep folders only, the file is
checked against a typed schema before anything runs (one line naming the file, the line and the key), its
values reach Hydra as single values (never spliced into an override), and one broken file does not hide
the others from the listing."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
import yaml

from harness.reports.evidence.sweep_spec import load_sweep

GOOD = "hypothesis: h\nreports: [overview]\ngrids:\n  - algo: [dppo, drpo]\n"


@pytest.fixture
def sweeps(tmp_path, monkeypatch):
    folder = tmp_path / "sweeps"
    folder.mkdir()
    monkeypatch.setenv("HARNESS_SWEEPS", str(folder))
    return folder


@pytest.mark.parametrize("body, line, words", [
    ("hypothesis: h\nreports: [overview\ngrids:\n", 3, ["not valid YAML"]),
    ("hypothesis: h\nreports: [overview]\ngrids:\n  - algo: !!python/object/apply:os.system [echo]\n", 4,
     ["not valid YAML", "python/object"]),
    ("hypothesis: h\nreports: [overview]\ngrids:\n  algo: dppo\n", 3, ["key 'grids'", "must be a list"]),
    ("hypothesis: h\nreports: overview\ngrids:\n  - algo: dppo\n", 2, ["key 'reports'", "must be a list"]),
    ("hypothesis: h\nreports: [overveiw]\ngrids:\n  - algo: dppo\n", 2, ["key 'reports[0]'", "not a report kind"]),
    ("hypothesis: h\nreports: [overview]\ngrids:\n  - algo: dppo\n    delta: {a: 1}\n", 5,
     ["key 'grids[0].delta'", "plain value"]),
    ("hypothesis: h\nreports: [overview]\ngrids:\n  - hydra.sweep.dir: /elsewhere\n", 4,
     ["key 'grids[0].hydra.sweep.dir'", "not allowed"]),
    ("hypothesis: h\nreports: [overview]\noverrides: ['seed=1,2']\ngrids:\n  - algo: dppo\n", 3,
     ["key 'overrides[0]'", "put sweep axes in a grid"]),
    ("hypothesis: h\nreports: [overview]\ngrids:\n  - algo: dppo\nrepots: [x]\n", 5, ["key 'repots'", "not allowed"]),
    ("hypothesis: h\nhypothesis: g\nreports: [overview]\ngrids:\n  - algo: dppo\n", 2, ["'hypothesis' is given twice"]),
    ("hypothesis: h\nreports: [overview]\ngrids:\n  - algo: dppo\ntests:\n  - {measure: gain, sesoi: abc}\n", 6,
     ["key 'tests[0].sesoi'", "'abc'"]),
    ("- just\n- a list\n", None, ["must be a mapping"]),
])
def test_a_malformed_sweep_file_is_one_line_naming_file_line_and_key(sweeps, body, line, words):
    (sweeps / "bad.yaml").write_text(body)
    with pytest.raises(ValueError) as err:
        load_sweep("bad")
    message = str(err.value)
    assert "\n" not in message and f"sweep 'bad' ({sweeps / 'bad.yaml'}" in message, message
    if line is not None:
        assert f"line {line})" in message, message
    for word in words:
        assert word in message, message


@pytest.mark.parametrize("name", ["../../elsewhere/x", "a/b", "/etc/passwd", "..", "x;y"])
def test_a_sweep_name_is_not_a_path(sweeps, tmp_path, name):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "x.yaml").write_text(GOOD)
    with pytest.raises(ValueError, match="is not allowed: a name from the sweep folders"):
        load_sweep(name)


def test_a_file_given_by_its_path_is_read_from_there(sweeps, tmp_path):
    (tmp_path / "mine.yaml").write_text(GOOD)
    spec = load_sweep(str(tmp_path / "mine.yaml"))
    assert spec.name == "mine" and spec.grid_overrides() == [["algo=dppo,drpo"]]


def test_values_are_never_spliced_into_overrides(sweeps):
    (sweeps / "commas.yaml").write_text('hypothesis: h\nreports: [overview]\nexperiment_name: "e1,e2"\n'
                                        "grids:\n  - algo: dppo\n    trainer.progress: [\"a,b\", \"it's\"]\n")
    spec = load_sweep("commas")
    from harness.config.overrides import expand_sweep

    jobs = expand_sweep([*spec.common_overrides(), *spec.grid_overrides()[0]])
    assert len(jobs) == 2, jobs  # two values of one axis; the experiment name is one value
    from hydra.core.override_parser.overrides_parser import OverridesParser

    values = [{o.key_or_group: o.value() for o in OverridesParser.create().parse_overrides(job)} for job in jobs]
    assert [v["experiment_name"] for v in values] == ["e1,e2", "e1,e2"]
    assert [v["trainer.progress"] for v in values] == ["a,b", "it's"]


def test_one_broken_file_is_listed_as_broken_and_the_others_still_are(tmp_path):
    folder = tmp_path / "sweeps"
    folder.mkdir()
    (folder / "good.yaml").write_text(GOOD)
    (folder / "broken.yaml").write_text("hypothesis: [unclosed\n")
    env = {**os.environ, "HARNESS_SWEEPS": str(folder)}
    proc = subprocess.run([sys.executable, "-m", "harness", "sweep"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    listed = {line.split()[0]: line for line in proc.stdout.splitlines()[1:]}
    assert "BROKEN" in listed["broken"] and "not valid YAML" in listed["broken"]
    assert "BROKEN" not in listed["good"] and "delta_sensitivity" in listed


def test_a_bad_name_or_file_exits_2_with_one_line_and_creates_nothing(tmp_path):
    folder = tmp_path / "sweeps"
    folder.mkdir()
    (folder / "broken.yaml").write_text(GOOD + "reports: [overview]\n")
    env = {**os.environ, "HARNESS_SWEEPS": str(folder), "HARNESS_OUTPUT_ROOT": str(tmp_path)}
    for name, words in (("broken", "'reports' is given twice"), ("../../elsewhere/x", "is not allowed")):
        proc = subprocess.run([sys.executable, "-m", "harness", "sweep", name], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 2 and words in proc.stderr, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sweeps"]


def test_minus_v_reaches_every_job_of_a_named_sweep(run_harness, tmp_path):
    """`-v sweep <name>` is Hydra's `hydra.verbose=harness` in each grid's jobs (no environment variable carries
    it): the jobs' recorded Hydra config says so, and MLflow's own lines are shown."""
    sweeps = tmp_path / "sweeps"
    sweeps.mkdir()
    (sweeps / "loud.yaml").write_text("hypothesis: h\nreports: [overview]\noverrides: [debug=quick, trainer.steps=1]\n"
                                      "grids:\n  - {algo: dppo}\n  - {algo: drpo}\n")
    proc = run_harness("-v", "sweep", "loud", env={"HARNESS_SWEEPS": str(sweeps)}, check=True)
    assert "Creating initial MLflow database tables" in proc.stdout + proc.stderr
    recorded = sorted(tmp_path.glob("multirun/loud/*/g*_0/.hydra/hydra.yaml"))
    assert len(recorded) == 2 and all(yaml.safe_load(p.read_text())["hydra"]["verbose"] == "harness" for p in recorded)
