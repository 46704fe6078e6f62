"""A sweep as a user sees it in a terminal (a pseudo-terminal): a status line at least every 10 s while its
ensembles train (each ensemble's step of its total and its time left), its set-up in one line for the
grouping and one for tracking, no two lines run together, and its answer last: the verdict lines of its
reports, which its index page and its MLflow parent run (a real SQLite store) carry too."""
from __future__ import annotations

import fcntl
import json
import os
import re
import select
import struct
import subprocess
import sys
import termios
import time

import pytest
import yaml
from mlflow.tracking import MlflowClient

GRID = ("multirun", "debug=quick", "trainer.steps=24", "algo=dppo,drpo", "delta=0.1,0.2", "seed=0,1")
WORDS = r"(sensitive|insensitive|undecided|sensitive \(size undecided\))"
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def run_in_terminal(argv, cwd, env, timeout=900):
    """Run argv with a 40x160 pseudo-terminal as its stdin, stdout and stderr: (exit code, [(seconds, bytes)])."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=slave, stdout=slave, stderr=slave, start_new_session=True)
    os.close(slave)
    start, chunks = time.monotonic(), []
    try:
        while time.monotonic() - start < timeout:
            ready, _, _ = select.select([master], [], [], 1.0)
            if not ready:
                continue
            try:
                data = os.read(master, 65536)
            except OSError:  # the terminal closed: every process that held it has ended
                break
            if not data:
                break
            chunks.append((time.monotonic() - start, data))
    finally:
        os.close(master)
        code = proc.wait(timeout=60)
    return code, chunks


@pytest.fixture(scope="module")
def sweep(tmp_path_factory, warm_cache):
    root = tmp_path_factory.mktemp("terminal")
    # unbuffered: each print writes its text and its newline separately, as when two workers' lines ran together
    env = {**os.environ, "HARNESS_OUTPUT_ROOT": str(root), "TERM": "xterm", "PYTHONUNBUFFERED": "1"}
    code, chunks = run_in_terminal([sys.executable, "-m", "harness", *GRID, f"cache_dir={warm_cache}"], root, env)
    text = b"".join(data for _, data in chunks).decode(errors="replace")
    assert code == 0, text[-4000:]
    (sweep_dir,) = (root / "multirun").glob("*/*")
    return root, sweep_dir, chunks, text


def screen_lines(text: str) -> list:
    """The lines left on the screen: each line as its last redraw (after its last carriage return) left it."""
    return [ANSI.sub("", line.split("\r")[-1]) for line in text.replace("\r\n", "\n").split("\n")]


def test_progress_every_10_s_and_the_verdicts_last(sweep):
    _, sweep_dir, chunks, text = sweep
    launched = next(t for t, data in chunks if b"launching 8 jobs" in data)
    summary = next(t for t, data in chunks if b"sweep: 8 runs: 8 finished" in data)
    times = [launched] + [t for t, _ in chunks if launched < t < summary] + [summary]
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert max(gaps) <= 10.0, f"{max(gaps):.1f} s without output"
    assert re.search(r"\d/8 runs · about [0-9:]+ left", text), text[-3000:]  # the overall state leads the line
    steps = re.findall(r"ensemble (\d): step (\d+)/24, ([0-9:?]+) left", text)  # then an ensemble, as 80 columns fit
    assert "1" in {e for e, _, _ in steps} and any(left != "?" for _, _, left in steps), text[-3000:]

    lines = [line for line in screen_lines(text) if line.strip()]
    setup = lines[:lines.index(next(line for line in lines if line.startswith("launching "))) + 1]
    said = [line.split(":")[0] for line in setup if not line.startswith("harness: ")]  # (the notices before)
    assert said == ["tracking", "launching 8 jobs (launcher=local)"], setup
    assert "2 ensembles of 4 runs on 2 worker processes" in setup[-1] and (sweep_dir / "jobs.txt").is_file()
    assert len((sweep_dir / "jobs.txt").read_text().splitlines()) == 8
    assert not [line for line in lines if ": FINISHED " in line]  # at a terminal the status line counts them
    whole = re.compile(r"run [^ :]+: FINISHED [^:]+ -> \S+ \(mlflow run [0-9a-f]{32}\)")
    logged = [line.split(" ", 2)[-1] for log in sweep_dir.glob("*/job.log")  # each run's job.log holds its line
              for line in log.read_text().splitlines() if ": FINISHED " in line]
    assert len(logged) == 8 and all(whole.search(line) for line in logged), logged
    tail = lines[lines.index("verdicts:"):]
    assert [re.match(rf"  sensitivity · (dppo|drpo): {WORDS} to δ \(2 seeds per value", line) is not None
            for line in tail[1:]] == [True, True], tail


def test_the_parent_run_carries_the_verdicts(sweep):
    root, sweep_dir, _, _ = sweep
    info = json.loads((sweep_dir / "parent_run.json").read_text())
    client = MlflowClient(f"sqlite:///{root / 'mlruns.db'}")
    data = client.get_run(info["run_id"]).data
    gathered = json.loads((sweep_dir / "reports" / "verdicts.json").read_text())
    for verdict in gathered:
        assert data.tags[f"harness.verdict.sensitivity.{verdict['subject']}"] == verdict["word"]
        assert verdict["short"] in data.tags["mlflow.note.content"]
    for name in ("dppo", "drpo"):  # the reports' final accuracy: per run the mean of its last 3 evaluations
        finals = []
        for seed in (0, 1):
            (folder,) = [f for f in sweep_dir.iterdir() if (f / "config.yaml").is_file() and
                         (lambda c: (c["algo"]["name"], c["algo"]["delta"], c["seed"]))(
                             yaml.safe_load((f / "config.yaml").read_text())) == (name, 0.1, seed)]
            rows = map(json.loads, (folder / "metrics.jsonl").read_text().splitlines())
            evals = [row["eval/accuracy"] for row in rows if "eval/accuracy" in row]
            finals.append(sum(evals[-3:]) / 3)
        assert data.metrics[f"sensitivity/{name}/final_accuracy_delta_0.1"] == pytest.approx(sum(finals) / 2)
        assert data.metrics[f"sensitivity/{name}/seeds"] == 2


def test_the_index_page_shows_the_verdicts(sweep):
    _, sweep_dir, _, _ = sweep
    index = (sweep_dir / "reports" / "index.html").read_text()
    for verdict in json.loads((sweep_dir / "reports" / "verdicts.json").read_text()):
        box, label = ("verdict", "decided") if verdict["decided"] else ("verdict undecided", "not decided")
        shown = re.search(rf'<p class="{box}"><span class="label">{label}</span> '
                          rf'<a href="sensitivity/index.html">sensitivity</a> · '
                          rf'{verdict["subject"]}: {WORDS} to δ', index)
        assert shown and shown.group(1) == verdict["word"], index[:3000]
    assert index.index("<h2>Verdicts</h2>") < index.index("<h2>Reports</h2>")
