"""An adaptive study is sealed (issue 39 items 7 and 8): `--continue` refuses, in one line and before anything
runs, a study that has ended, a sweep file edited since the study started, overrides that change what a run
computes, and a second driver while the first runs; the study's `adaptive.yaml` says why it stopped. Real
studies on debug=quick (one arm, two 2-step runs a round), real processes."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest
import yaml

pytestmark = pytest.mark.e2e  # real studies in real processes: out of the fast loop, as run_harness tests are

STUDY = """
    hypothesis: δ 0.1's token entropy is below 1000 nats
    reports: [decisions]
    overrides: [debug=quick, algo=dppo, trainer.steps=2]
    grids:
      - delta: [0.1]
    seeds: auto
    budget: {runs: 6, minutes: 0.01, per_round: 2, max_seeds: 6}
    tests:
      - name: entropy below 1000 nats
        measure: entropy
        hypothesis: less
        sesoi: 1
        contrast: {"algo.delta=0.1": 1}
        offset: 1000
"""
# the same regime with a precondition no run can meet: the study ends "not testable here" after its first round
UNTESTABLE = STUDY + """
    preconditions:
      - {name: entropy above 1000 nats, measure: entropy, at_least: 1000}
"""


class Study:
    """A real study, stopped after its first round, in its own output root; `harness(...)` runs the command
    line there with the study's sweep folder (a copy of the file is edited per test, never the original)."""

    def __init__(self, root, text: str):
        self.root, self.sweeps = root, root / "sweeps"
        self.sweeps.mkdir()
        (self.sweeps / "slow.yaml").write_text(textwrap.dedent(text))
        first = self.harness("sweep", "slow")
        assert first.returncode == 0, first.stderr[-3000:]
        (self.folder,) = (root / "multirun" / "slow").glob("*")

    def argv(self, *args: str) -> list:
        return [sys.executable, "-m", "harness", *args, f"cache_dir={self.root / 'cache'}"]

    def env(self, sweeps=None, env=None) -> dict:
        return {**os.environ, "HARNESS_OUTPUT_ROOT": str(self.root), "HARNESS_SWEEPS": str(sweeps or self.sweeps),
                "PYTHONUNBUFFERED": "1", **(env or {})}

    def harness(self, *args: str, sweeps=None, env=None) -> subprocess.CompletedProcess:
        where = (env or {}).get("HARNESS_OUTPUT_ROOT", self.root)  # another output root: run from there
        return subprocess.run(self.argv(*args), cwd=where, env=self.env(sweeps, env), capture_output=True, text=True,
                              timeout=600)

    def cont(self, *args: str, sweeps=None, env=None) -> subprocess.CompletedProcess:
        return self.harness("sweep", "slow", f"--continue={self.folder}", *args, sweeps=sweeps, env=env)

    def state(self) -> dict:
        return yaml.safe_load((self.folder / "adaptive.yaml").read_text())

    def listing(self) -> list:
        return sorted(str(p.relative_to(self.folder)) for p in self.folder.rglob("*"))


@pytest.fixture(scope="module")
def stopped(tmp_path_factory) -> Study:
    return Study(tmp_path_factory.mktemp("stopped"), STUDY)


def _refused(proc, *words: str) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("harness: error: sweep slow: --continue ") and all(w in line for w in words), line
    assert "round" not in proc.stdout, proc.stdout
    return line


def test_a_study_records_its_design_and_why_it_stopped(stopped):
    state = stopped.state()
    assert state["done"] == 2 and state["final"] is False and state["stopped"].startswith("minutes budget: ")
    assert state["design"]["grids"] == [{"delta": [0.1]}] and "hypothesis" not in state["design"]


@pytest.mark.parametrize("edit, changed", [
    (lambda text: text.replace("delta: [0.1]", "delta: [0.3]"), "grids[0].delta[0] was 0.1, now 0.3"),
    (lambda text: text.replace("offset: 1000", "offset: 900"), "tests[0].offset was 1000, now 900"),
    (lambda text: text.replace("trainer.steps=2]", "trainer.steps=3]"), "overrides[2] was"),
])
def test_an_edited_sweep_file_is_refused(stopped, tmp_path, edit, changed):
    (tmp_path / "slow.yaml").write_text(edit((stopped.sweeps / "slow.yaml").read_text()))
    before = stopped.listing()
    _refused(stopped.cont(sweeps=tmp_path), "changed since the study started", changed)
    assert stopped.listing() == before
    # its texts are not its design: a reworded hypothesis continues (checked by the refusal it does not give)
    (tmp_path / "slow.yaml").write_text((stopped.sweeps / "slow.yaml").read_text().replace("entropy is below", "entropy is under"))
    _refused(stopped.cont("trainer.lr=0.01", sweeps=tmp_path), "trainer.lr=0.01 would change")


def test_overrides_that_change_a_computation_are_refused(stopped):
    before = stopped.listing()
    line = _refused(stopped.cont("trainer.lr=0.01", "dataset.difficulty=4", "launcher=local_parallel"),
                    "trainer.lr=0.01 dataset.difficulty=4 would change what the runs compute")
    assert "launcher=local_parallel" not in line.split("would change")[0]
    _refused(stopped.cont("debug=null"), "debug=null would change", "the study ran with debug as the sweep file sets it")
    assert stopped.listing() == before


def test_an_ended_study_takes_no_more_rounds(tmp_path_factory):
    ended = Study(tmp_path_factory.mktemp("ended"), UNTESTABLE)
    state = ended.state()
    assert state["final"] is True and state["stopped"].startswith("not testable here at 2 seeds per arm"), state
    before = ended.listing()
    _refused(ended.cont(), "the study has ended: not testable here", "takes no more rounds")
    assert ended.listing() == before and ended.state() == state


def test_a_second_continue_is_refused_while_the_first_runs(tmp_path_factory):
    """The first `--continue` is frozen (SIGSTOP) once its round has started, so the second meets it running
    whatever the machine's load; the second is refused in one line and the first then ends its round whole."""
    study = Study(tmp_path_factory.mktemp("twice"), STUDY)
    first = subprocess.Popen(study.argv("sweep", "slow", f"--continue={study.folder}"), cwd=study.root,
                             env=study.env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen = []
    try:
        for line in first.stdout:
            seen.append(line)
            if "round 2:" in line:
                break
        assert "round 2:" in "".join(seen), "".join(seen)
        os.kill(first.pid, signal.SIGSTOP)
        state = (study.folder / "adaptive.yaml").read_text()
        _refused(study.cont(), f"study folder {study.folder} is in use by pid {first.pid}")
        assert (study.folder / "adaptive.yaml").read_text() == state
    finally:
        os.kill(first.pid, signal.SIGCONT)
        rest, _ = first.communicate(timeout=600)
    assert first.returncode == 0, "".join(seen) + rest
    assert study.state()["done"] == 4
    statuses = [(job / "status.txt").read_text().split()[0] for job in sorted(study.folder.glob("g0r2_*"))]
    assert statuses == ["FINISHED", "FINISHED"], statuses
