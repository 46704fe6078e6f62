"""A sweep's progress and its terminal: each unit's step and time left read from real job folders, worker
processes' lines printed whole by the driver (never two lines run together, even when each print writes its
text and its newline separately), and the live status line cleared before any line is printed above it."""
from __future__ import annotations

import io
import json
import multiprocessing
import sys
from concurrent.futures import ProcessPoolExecutor

from harness.launchers.output_relay import RelayServer
from harness.launchers.sweep_console import CLEAR, LineRelay, SweepConsole
from harness.launchers.sweep_progress import Unit, describe, last_step, read, units_of


def log_steps(folder, steps) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "metrics.jsonl", "a") as handle:
        for step in steps:
            handle.write(json.dumps({"step": step, "train/loss": 0.5, "eval/accuracy": 0.6}) + "\n")


def test_each_unit_shows_its_step_and_time_left_from_its_job_folders(tmp_path):
    a, b, alone, queued = tmp_path / "0", tmp_path / "1", tmp_path / "2", tmp_path / "3"
    log_steps(a, [0, 1, 2]), log_steps(b, [0, 1, 2]), log_steps(alone, range(20))
    (alone / "status.txt").write_text("FINISHED\n")
    units = units_of([[0, 1], [2], [3]], [a, b, alone, queued], [20, 20, 20, 20], [0, 1, 2, 3])
    assert [u.label for u in units] == ["ensemble 1", "run #2", "run #3"]
    for unit in units:
        read(unit, now=100.0)
    log_steps(a, range(3, 8)), log_steps(b, range(3, 7))
    with open(a / "metrics.jsonl", "a") as handle:
        handle.write('{"step": 9, "train/lo')  # a line being written: not a step yet
    for unit in units:
        read(unit, now=110.0)
    ensemble, done, waiting = units
    assert ensemble.step == 7 and ensemble.pace == 2.0 and ensemble.left_s() == 26.0  # 5 steps in 10 s, 13 to go
    assert done.done and waiting.step is None and last_step(queued / "metrics.jsonl") is None
    line = describe(units, elapsed=75.0, workers=2)
    # 26 s, then run #3's turn at the ensemble's pace (40 s)
    assert line.startswith("1/4 runs · about 1:06 left · ensemble 1: step 7/20, 0:26 left")
    assert line.endswith("run #3: starting · sweep 1:15") and "run #2" not in line, line


def test_workers_lines_arrive_whole_through_the_driver():
    out = io.StringIO()
    console = SweepConsole(live=False, every=3600, out=out, err=out)
    server = RelayServer(console)
    initializer, initargs = server.initializer()
    lines = [f"worker line {i:03d} " + "x" * (i % 50) for i in range(200)]
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=2, mp_context=context, initializer=initializer, initargs=initargs) as pool:
        # print writes a line's text and its newline in two calls: two processes' lines would run together
        list(pool.map(print, lines, chunksize=1))
    server.close()
    assert sorted(out.getvalue().splitlines()) == sorted(lines)


def test_a_live_status_line_is_cleared_before_a_line_is_printed_above_it():
    out = io.StringIO()
    console = SweepConsole(live=True, out=out, err=out)
    console.status("sweep 0:05 · ensemble 1 (2 runs): step 3/12, 0:20 left")
    relay = LineRelay("out", console.line)
    relay.write("run a: resumed")
    relay.write(" from step 3\nrun b: resu")
    relay.flush()  # a worker leaving mid-line: its rest still ends with a newline
    console.close()
    text = out.getvalue()
    assert text.count(CLEAR) == 3
    for printed in ("run a: resumed from step 3\n", "run b: resu\n"):
        assert CLEAR + printed in text, text
    assert not text.endswith("left"), "the status line is left on the terminal"
    assert not relay.isatty() and sys.stdout is not relay


def test_a_terminal_folds_each_runs_result_line_and_a_log_keeps_it(monkeypatch):
    monkeypatch.delenv("HARNESS_LOG_LEVEL", raising=False)
    result = "run algo=dppo,seed=0: FINISHED eval/accuracy (last evaluation) 0.62 -> /x (mlflow run 1)\n"
    for live, shown in ((True, False), (False, True)):
        out = io.StringIO()
        console = SweepConsole(live=live, out=out, err=io.StringIO())
        console.line("out", result)
        console.line("out", "run algo=dppo,seed=1: resumed from step 3\n")
        assert (result in out.getvalue()) is shown and "resumed from step 3" in out.getvalue()
    monkeypatch.setenv("HARNESS_LOG_LEVEL", "INFO")  # -v: every line, a terminal too
    out = io.StringIO()
    SweepConsole(live=True, out=out, err=io.StringIO()).line("out", result)
    assert result in out.getvalue()
