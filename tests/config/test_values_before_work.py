"""Values that used to end in a traceback or in minutes of silent work are refused in one line naming the key and
what is allowed, exit 2, before anything is created (issue #50): unresolvable interpolations and an output root
whose path holds `${` (case 12), a folder name longer than the file system takes, in a sweep as in a run (case 13),
a built-in task's difficulty beyond its bounds (case 19), `trainer.device=cuda` where no GPU is visible, `--plan`
included (case 20). Hydra composes the real configs, in this process (run_cli) or in a real one."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli import run_cli

REPO = Path(__file__).resolve().parents[2]


def _refused(argv, capsys, *fragments: str) -> str:
    capsys.readouterr()
    assert run_cli(list(argv)) == 2
    captured = capsys.readouterr()
    line, = captured.err.strip().splitlines()
    assert line.startswith("harness: error: ") and "Traceback" not in captured.out + captured.err
    for fragment in fragments:
        assert fragment in line, (fragment, line)
    return line


@pytest.fixture
def root(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("HARNESS_OUTPUT_ROOT", str(tmp_path))
    monkeypatch.delenv("A5LR", raising=False)
    return tmp_path


UNRESOLVABLE = [
    (["trainer.lr=${lr}"], "trainer.lr='${lr}' cannot be resolved: no key 'lr' in the config"),
    (["multirun", "seed=0,1", "trainer.lr=${lr}", "--plan"], "trainer.lr='${lr}' cannot be resolved"),
    (["trainer.lr=${oc.env:A5LR}"], "trainer.lr='${oc.env:A5LR}' cannot be resolved: the environment variable A5LR "
                                    "is not set (set it, or give a default: ${oc.env:A5LR,<default>})"),
    (["multirun", "seed=0,1", "experiment_name=${oc.env:A5LR}", "--plan"],
     "experiment_name='${oc.env:A5LR}' cannot be resolved: the environment variable A5LR is not set"),
    (["tracking.experiment=${oc.env:A5LR}", "--cfg", "job"], "tracking.experiment='${oc.env:A5LR}'"),
]


@pytest.mark.parametrize("argv,said", UNRESOLVABLE, ids=[" ".join(a) for a, _ in UNRESOLVABLE])
def test_an_unresolvable_interpolation_is_one_line(argv, said, root, capsys):
    _refused(argv, capsys, said)
    assert list(root.iterdir()) == []


def test_an_output_root_holding_an_interpolation_is_refused(tmp_path, monkeypatch, capsys):
    folder = tmp_path / "price${x}"
    folder.mkdir()
    monkeypatch.delenv("HARNESS_OUTPUT_ROOT", raising=False)
    monkeypatch.chdir(folder)  # the output root is the current folder
    _refused(["debug=quick"], capsys, f"output_root=. ({folder}) is not allowed: a folder path holding '${{'")
    monkeypatch.setenv("HARNESS_OUTPUT_ROOT", str(folder))
    _refused(["multirun", "seed=0,1", "--plan"], capsys, f"output_root={folder} is not allowed")
    assert list(folder.iterdir()) == []


@pytest.mark.e2e  # the command line in real processes (fast loop: README)
def test_a_folder_name_too_long_is_one_line_for_a_sweep_as_for_a_run(tmp_path):
    """In real processes: the sweep (and its --plan) gets the run's one line, not the stopped-sweep look-up's
    OSError."""
    too_long = tmp_path / ("a" * 300)
    env = {**os.environ, "HARNESS_OUTPUT_ROOT": str(too_long), "PYTHONPATH": str(REPO)}
    said = f"output_root={too_long} is not allowed: its folder name {'a' * 24}… is 300 bytes long, more than the file"
    for argv in (["debug=quick", "tracking=none"], ["multirun", "seed=0,1", "debug=quick", "tracking=none"],
                 ["multirun", "seed=0,1", "debug=quick", "--plan"]):
        done = subprocess.run([sys.executable, "-m", "harness", *argv], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-3000:]
        line, = done.stderr.splitlines()
        assert line.startswith(f"harness: error: {said}"), line
    assert list(tmp_path.iterdir()) == []


def test_a_folder_the_stopped_sweep_look_up_cannot_stat_is_no_stopped_sweep(tmp_path):
    from omegaconf import OmegaConf

    from harness.sweeps.continued import stopped_sweep

    sweep = OmegaConf.create({"hydra": {"sweep": {"dir": str(tmp_path / ("b" * 300) / "multirun" / "${now:%H}")}},
                              "launcher": {"detach": False}})
    assert stopped_sweep(sweep) is None


DIFFICULTY = [
    (["dataset=arithmetic", "dataset.difficulty=40"],
     "dataset.difficulty=40 is not allowed: dataset=arithmetic takes an integer from 1 to 18 (its operands are "
     "drawn as 64-bit integers)"),
    (["dataset=arithmetic", "dataset.ops=*", "dataset.difficulty=16"],
     "dataset.difficulty=16 is not allowed: dataset=arithmetic takes an integer from 1 to 15 (its longest sequence, "
     "68 tokens at difficulty 16 (<bos>, prompt, longest answer, <eos>), must fit model.max_position_embeddings=64)"),
    (["dataset.difficulty=1000000"],
     "dataset.difficulty=1000000 is not allowed: dataset=sorting takes an integer from 1 to 14"),
    (["multirun", "dataset.difficulty=4,1000000", "--plan"], "dataset.difficulty=1000000 is not allowed"),
    (["dataset.difficulty=30", "model.max_position_embeddings=96"],
     "dataset=sorting takes an integer from 1 to 22 (its longest sequence, 98 tokens at difficulty 23"),
]


@pytest.mark.parametrize("argv,said", DIFFICULTY, ids=[" ".join(a) for a, _ in DIFFICULTY])
def test_a_difficulty_beyond_its_task_is_refused_before_any_problem_is_drawn(argv, said, root, capsys):
    import time

    started = time.process_time()
    _refused(argv, capsys, said)
    assert time.process_time() - started < 5, "refused by arithmetic, not by drawing problems"
    assert list(root.iterdir()) == []


def test_the_largest_difficulty_allowed_fits_the_model():
    """The bound is the task's own sequence: at the largest difficulty allowed, a real task's prompt and longest
    answer fit the model's positions; one more does not (or the task's own bound stops it)."""
    from types import SimpleNamespace

    from harness.config.task_shapes import largest_difficulty
    from harness.trainers.builtin.tasks import build_task

    for name, ops in (("sorting", "+"), ("arithmetic", "+"), ("arithmetic", "+-*")):
        for positions in (16, 64, 200):
            limit, _ = largest_difficulty(name, ops, positions)
            assert 1 <= limit
            task = build_task(SimpleNamespace(name=name, difficulty=limit, eval_size=1, seed=0, ops=ops))
            assert 1 + task.prompt_length + task.max_answer_length + 1 <= positions
            if limit < 18 or name == "sorting":
                bigger = build_task(SimpleNamespace(name=name, difficulty=limit + 1, eval_size=1, seed=0, ops=ops))
                assert 1 + bigger.prompt_length + bigger.max_answer_length + 1 > positions


@pytest.mark.e2e  # the command line in real processes (fast loop: README)
@pytest.mark.parametrize("argv", [["multirun", "seed=0,1", "trainer.device=cuda", "--plan"],
                                  ["multirun", "seed=0,1", "launcher=local_parallel", "trainer.device=cuda:0", "--plan"],
                                  ["trainer.device=cuda", "debug=quick"]])
def test_a_cuda_device_where_none_is_visible_is_refused_before_the_plan(argv, tmp_path):
    """In a real process that sees no GPU (CUDA_VISIBLE_DEVICES empty, also on a GPU machine)."""
    env = {**os.environ, "HARNESS_OUTPUT_ROOT": str(tmp_path), "PYTHONPATH": str(REPO), "CUDA_VISIBLE_DEVICES": ""}
    done = subprocess.run([sys.executable, "-m", "harness", *argv], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 2 and done.stdout == "", (done.stdout, done.stderr[-3000:])
    launcher = "local_parallel" if "launcher=local_parallel" in argv else "local"
    device = "cuda:0" if "trainer.device=cuda:0" in argv else "cuda"
    assert done.stderr.splitlines() == [
        f"harness: error: trainer.device={device} is not allowed with launcher={launcher}: no CUDA device is visible "
        "on this machine, so every run would fail at its start; use trainer.device=auto or cpu here, or a launcher "
        "whose jobs run on GPU nodes (launcher=slurm)"]
    assert list(tmp_path.iterdir()) == []
