"""Truthful status: an exception -> FAILED with its traceback, SIGTERM -> KILLED, SIGKILL -> RUNNING with
a stopped heartbeat, shown STALE by `status` and marked KILLED by `repair` (a live run is left alone)."""
from __future__ import annotations

import signal
import time

import pytest

from tracking_helpers import finish, harness_tool, printed_run_id, runs_of, start_writer, wait_until

FAST_BEAT = {"HARNESS_HEARTBEAT_S": "0.5"}


def _by_id(uri: str, experiment: str = "writers") -> dict:
    return {r.info.run_id: r for r in runs_of(uri, experiment)}


@pytest.mark.slow  # five writer processes, a SIGKILL, a heartbeat left to age, `status` and `repair`: ~30 s
def test_failed_killed_and_stale_runs(tmp_path):
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlruns.db'}"
    code, out, err = finish(start_writer(uri, tmp_path / "runs" / "raises", "--name", "raises", "--steps", "5",
                                         "--fail-at", "3"))
    assert code == 1
    failed_id = printed_run_id(out)
    live = start_writer(uri, tmp_path / "runs" / "live", "--name", "live", "--steps", "100000", "--sleep", "0.2",
                        env=FAST_BEAT)
    term = start_writer(uri, tmp_path / "runs" / "term", "--name", "term", "--steps", "100000", "--sleep", "0.2",
                        env=FAST_BEAT)
    code, out, err = finish(start_writer(uri, tmp_path / "runs" / "sigkill", "--name", "sigkill", "--steps", "50",
                                         "--sigkill-at", "5", env=FAST_BEAT))
    assert code == -signal.SIGKILL
    killed_id = printed_run_id(out)
    wait_until(lambda: (tmp_path / "runs" / "term" / "metrics.jsonl").is_file(), "the SIGTERM target to log")
    term.send_signal(signal.SIGTERM)
    code, out, _ = finish(term)
    assert code == 143
    term_id = printed_run_id(out)

    runs = _by_id(uri)
    assert runs[failed_id].info.status == "FAILED"
    error = MlflowClient(uri).download_artifacts(failed_id, "error.txt", str(tmp_path))
    assert "failed on purpose at step 3" in open(error).read() and "Traceback" in open(error).read()
    assert runs[term_id].info.status == "KILLED"
    assert runs[killed_id].info.status == "RUNNING", "nothing can close a SIGKILLed run but repair"

    time.sleep(3)  # the SIGKILLed run's heartbeat ages; the live one's keeps beating
    shown = harness_tool("status", "--experiment", "writers", "--stale-after", "2.5", root=tmp_path)
    assert shown.returncode == 0, shown.stderr
    lines = {line.split()[0]: line for line in shown.stdout.splitlines() if line.split()}
    assert "STALE" in lines["sigkill"] and "RUNNING" in lines["live"] and "FAILED" in lines["raises"]
    assert "KILLED" in lines["term"] and "python -m harness repair" in shown.stdout

    repaired = harness_tool("repair", "--experiment", "writers", "--stale-after", "2.5", root=tmp_path)
    assert repaired.returncode == 0, repaired.stderr
    assert "marked KILLED: sigkill" in repaired.stdout and "live" not in repaired.stdout
    runs = _by_id(uri)
    assert runs[killed_id].info.status == "KILLED" and "harness.repaired" in runs[killed_id].data.tags
    assert runs[killed_id].info.end_time is not None
    live.send_signal(signal.SIGTERM)
    finish(live)
    assert "nothing to repair" in harness_tool("repair", "--experiment", "writers", "--stale-after", "2.5",
                                               root=tmp_path).stdout


@pytest.mark.slow  # end to end: `harness status --watch` follows three writer processes to their end
def test_status_watch_follows_runs_to_the_end(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlruns.db'}"
    finish(start_writer(uri, tmp_path / "runs" / "first", "--name", "first", "--steps", "1"))  # creates the store
    writers = [start_writer(uri, tmp_path / "runs" / f"w{i}", "--name", f"w{i}", "--steps", "40", "--sleep", "0.1")
               for i in range(2)]
    wait_until(lambda: all((tmp_path / "runs" / f"w{i}" / "metrics.jsonl").is_file() for i in range(2)),
                "both runs to start")  # without a parent run, --watch knows only the runs already there
    watch = harness_tool("status", "--experiment", "writers", "--watch", "--interval", "0.5", root=tmp_path,
                         timeout=300)
    for proc in writers:
        assert finish(proc)[0] == 0
    assert watch.returncode == 0, watch.stderr[-2000:]
    final = watch.stdout.strip().split("\n\n")[-1]
    assert final.count("FINISHED") == 3 and "3/3" in watch.stderr


@pytest.mark.slow  # the harness's command line in subprocesses (fast loop: README)
def test_status_refuses_bad_input(tmp_path):
    missing = harness_tool("status", root=tmp_path)
    assert missing.returncode == 2 and "--tracking-uri" in missing.stderr
    uri = f"sqlite:///{tmp_path / 'mlruns.db'}"
    finish(start_writer(uri, tmp_path / "runs" / "one", "--steps", "1"))
    unknown = harness_tool("status", "--experiment", "nope", root=tmp_path)
    assert unknown.returncode == 2 and "--experiment='nope'" in unknown.stderr and "writers" in unknown.stderr
    bad = harness_tool("repair", "--experiment", "writers", "--stale-after", "0", root=tmp_path)
    assert bad.returncode == 2 and "--stale-after=0" in bad.stderr
    beat = harness_tool("status", "--experiment", "writers", root=tmp_path, env={"HARNESS_HEARTBEAT_S": "soon"})
    assert beat.returncode == 2 and "HARNESS_HEARTBEAT_S='soon' is not allowed" in beat.stderr


def test_a_sigkilled_training_run_is_repaired_as_killed(run_harness):
    killed = run_harness("debug=quick", "trainer.checkpoint_every=2", env={"HARNESS_FAULT_KILL_AT_STEP": "2", **FAST_BEAT})
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    uri = f"sqlite:///{run_harness.root / 'mlruns.db'}"
    (run,) = runs_of(uri, "harness")
    assert run.info.status == "RUNNING" and run.data.tags["harness.step"] == "2"
    time.sleep(2)
    shown = harness_tool("status", "--stale-after", "1.5", root=run_harness.root)
    assert "STALE" in shown.stdout, shown.stdout
    repaired = harness_tool("repair", "--stale-after", "1.5", root=run_harness.root)
    assert f"marked KILLED: {run.info.run_name} (run {run.info.run_id})" in repaired.stdout
    (run,) = runs_of(uri, "harness")
    assert run.info.status == "KILLED"
