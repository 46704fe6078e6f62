"""An installed extension that cannot be loaded costs only what it would have registered (issue #50, cases 11, 16,
18): every other command runs (`multirun … --plan` on launcher=local), and the entry point is named in one line
where a name it may register is selected, or the objectives are listed. Whatever the module does on import (an
import error, a BaseException of its own, `sys.exit(0)`, a module-level argument parser that exits): no
traceback, no silent exit 0, no usage text of its own. Names no override could select are refused at
registration. The extensions are found as installed ones are (a dist-info folder on the path), in real processes."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness.algorithms.params import PGParams
from harness.algorithms.specs import ObjectiveSpec, register_objective
from harness.launchers.registry import LauncherEntry, register_launcher

REPO = Path(__file__).resolve().parents[2]
PLAN = ["multirun", "seed=0,1", "debug=quick", "--plan"]
OBJECTIVE = ('from harness.algorithms.params import PGParams\n'
             'from harness.algorithms.specs import ObjectiveSpec, register_objective\n'
             'register_objective(ObjectiveSpec({name!r}, "harness.algorithms.baselines:PGIS", "baseline", PGParams))\n')


def _installed(root: Path, module: str, source: str = None) -> Path:
    """A distribution `ext-probe` whose entry point names `module` (written from `source` unless None: missing)."""
    info = root / "ext_probe-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ext-probe\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[harness.extensions]\nprobe = {module}\n")
    if source is not None:
        (root / f"{module}.py").write_text(textwrap.dedent(source))
    return root


def _harness(extension: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(extension), str(REPO)]), "HARNESS_OUTPUT_ROOT": str(cwd),
           "MLFLOW_TRACKING_URI": f"sqlite:///{cwd}/mlruns.db"}
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


def _entry(module: str) -> str:
    return f"entry point probe = {module!r} of ext-probe (group harness.extensions) cannot be loaded: "


def _planned(proc: subprocess.CompletedProcess) -> None:
    """The plan of the 2-job sweep printed, exit 0, nothing on stderr."""
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "  jobs: 2 (launcher=local)" in proc.stdout, proc.stdout
    assert proc.stderr == "", proc.stderr[-3000:]


@pytest.mark.e2e  # the command line in real processes (fast loop: README)
def test_a_broken_launcher_extension_leaves_other_sweeps_alone(tmp_path):
    extension = _installed(tmp_path / "ext", "probe_missing")
    _planned(_harness(extension, *PLAN, cwd=tmp_path))
    selected = _harness(extension, *PLAN, "launcher=stamping", cwd=tmp_path)
    assert selected.returncode == 2 and selected.stdout == ""
    line, = selected.stderr.splitlines()
    assert line.startswith("harness: error: launcher=stamping is not a known choice; allowed: local, "), line
    assert line.endswith("an extension that may register it cannot be loaded: " + _entry("probe_missing")
                         + "ModuleNotFoundError: No module named 'probe_missing'"), line


@pytest.mark.e2e  # the command line in real processes (fast loop: README)
def test_an_extension_raising_a_base_exception_is_named_in_one_line(tmp_path):
    extension = _installed(tmp_path / "ext", "probe_base", """
        class Abort(BaseException):
            pass

        raise Abort("no licence server")
    """)
    listed = _harness(extension, "algos", cwd=tmp_path)
    assert listed.returncode == 0 and "dppo" in listed.stdout, listed.stderr[-3000:]
    assert listed.stderr.splitlines() == ["harness: warning: " + _entry("probe_base") + "Abort: no licence server"]
    _planned(_harness(extension, *PLAN, cwd=tmp_path))


@pytest.mark.e2e  # the command line in real processes (fast loop: README)
def test_an_extension_calling_sys_exit_does_not_end_the_command(tmp_path):
    extension = _installed(tmp_path / "ext", "probe_exit", "import sys\nsys.exit(0)\n" + OBJECTIVE.format(name="exiting_pg"))
    _planned(_harness(extension, *PLAN, cwd=tmp_path))  # not exit 0 with nothing done
    selected = _harness(extension, "algo=exiting_pg", "--cfg", "job", cwd=tmp_path)
    assert selected.returncode == 2 and selected.stdout == ""
    line, = selected.stderr.splitlines()
    assert line.endswith(_entry("probe_exit") + "it called sys.exit(0) while being imported"), line


@pytest.mark.e2e  # the command line in real processes (fast loop: README)
def test_an_extension_parsing_the_command_line_is_named_not_its_usage(tmp_path):
    extension = _installed(tmp_path / "ext", "probe_parser", """
        import argparse

        parser = argparse.ArgumentParser(prog="probe")
        parser.add_argument("--width", type=int, default=3)
        options = parser.parse_args()
    """)
    listed = _harness(extension, "algos", cwd=tmp_path)
    assert listed.returncode == 0 and "dppo" in listed.stdout, listed.stderr[-3000:]
    line, = listed.stderr.splitlines()  # the parser's own usage line is not printed
    assert line == ("harness: warning: " + _entry("probe_parser") + "it called sys.exit(2) while being imported "
                    "(its last output: 'probe: error: unrecognized arguments: algos')"), line
    _planned(_harness(extension, *PLAN, cwd=tmp_path))


def test_names_no_override_could_select_are_refused_at_registration(tmp_path):
    rule = "is not an allowed name: a letter, then letters, digits or underscores"
    for name in ("../evil", "my,obj", "", "9lives"):
        with pytest.raises(ValueError, match=f"objective {name!r} {rule}"):
            register_objective(ObjectiveSpec(name, "harness.algorithms.baselines:PGIS", "baseline", PGParams))
        with pytest.raises(ValueError, match=f"launcher {name!r} {rule}"):
            register_launcher(LauncherEntry(name, "harness.launchers.base:SequentialLauncher", "a test's"))
    extension = _installed(tmp_path / "ext", "probe_names", OBJECTIVE.format(name="../evil"))
    listed = _harness(extension, "algos", cwd=tmp_path)
    assert listed.returncode == 0 and "../evil" not in listed.stdout
    assert listed.stderr.splitlines() == ["harness: warning: " + _entry("probe_names") + "ValueError: objective "
                                          f"'../evil' {rule} (algo=<name> selects it)"]
