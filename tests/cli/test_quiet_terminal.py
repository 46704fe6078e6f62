"""No line from a third-party library on the terminal: the libraries log at WARNING (Hydra's own logging config
puts the root logger at INFO, and matplotlib's fontTools then logged hundreds of `[HYDRA] glyf subsetted`
lines per report), the harness's own loggers at INFO; `warm start: …` is said once, by the process that trains."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from pty_screen import screen

ROOT = Path(__file__).resolve().parents[2]

# What the harness itself prints on a sweep's terminal; anything else is a library's
OWN_LINE = re.compile(r"^(harness: |tracking: |launching |warm start: |run |sweep[: ]|  (folder|reports|mlflow): |"
                      r"building the sweep's reports|composing)")

IN_A_JOB = """
import logging, sys
from hydra.core.utils import configure_log
from harness.launchers.compose import compose_config, hydra_session
with hydra_session():
    cfg = compose_config(["hydra.runtime.output_dir=" + sys.argv[3]])
configure_log(cfg.hydra.{which}, cfg.hydra.verbose)
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
fig = plt.figure()
fig.text(0.1, 0.5, "δ = 0.1, μ and π")
fig.savefig(sys.argv[2], format="pdf")   # fontTools subsets the font here, logging at INFO
logging.getLogger("harness").info("the harness's own line")
logging.getLogger("urllib3.connectionpool").info("a library's line")
"""


def _logged(tmp_path, which: str) -> str:
    proc = subprocess.run([sys.executable, "-c", IN_A_JOB.format(which=which), str(ROOT / "conf"),
                           str(tmp_path / "figure.pdf"), str(tmp_path)],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout + proc.stderr


def test_hydras_driver_logging_keeps_libraries_at_warning_and_the_harness_at_info(tmp_path):
    out = _logged(tmp_path, "hydra_logging")  # the driver: reports are built here after the sweep
    assert "the harness's own line" in out
    assert "subset" not in out and "Glyph" not in out and "a library's line" not in out, out[:2000]


def test_a_jobs_logging_keeps_libraries_at_warning_and_the_harness_at_info(tmp_path):
    out = _logged(tmp_path, "job_logging")  # a job run in the driver (named sweeps) or in a worker
    assert "the harness's own line" in out
    assert "subset" not in out and "Glyph" not in out and "a library's line" not in out, out[:2000]


def test_a_small_sweep_and_its_rerun_print_only_the_harness_lines_in_a_terminal(run_harness):
    command = run_harness.argv("multirun", "algo=dppo,drpo", "seed=0,1", "debug=quick")
    code, shown, raw = screen(command, run_harness.root, run_harness.env(), columns=80)
    assert code == 0, "\n".join(shown[-30:])
    foreign = [line for line in shown if not OWN_LINE.match(line)]
    assert not foreign, "lines from libraries:\n" + "\n".join(foreign[:20])
    # the progress line as it was drawn: within 79 columns, the sweep's state first
    states = [state for state in re.split(r"[\r\n]", raw) if " runs · about " in state]
    assert states and all(len(state) <= 79 and re.match(r"\d/4 runs · about ", state) for state in states), states
    assert sum(line.startswith("warm start: ") for line in shown) == 1, "\n".join(shown)
    assert len(shown) <= 4 + 10, f"{len(shown)} lines for 4 runs:\n" + "\n".join(shown)
    # the same command again: every run FINISHED is skipped, and the reports are built again
    code, shown, _ = screen(command, run_harness.root, run_harness.env(), columns=80)
    assert code == 0, "\n".join(shown[-30:])
    foreign = [line for line in shown if not OWN_LINE.match(line)]
    assert not foreign, "lines from libraries on a re-run:\n" + "\n".join(foreign[:20])
