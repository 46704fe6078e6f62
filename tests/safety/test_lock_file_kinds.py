"""A `.harness.lock` that is a folder is reported as what it is, naming its path, in one line with exit 2 before
anything is written, not as the run or sweep folder's fault ("cannot write the run folder ...: Is a directory",
issue #50 case 21). Real processes; the claim itself in-process."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.infra.claim import FolderInUse, check_free, claim

REPO = Path(__file__).resolve().parents[2]


def test_a_lock_path_that_is_a_folder_is_named(tmp_path):
    folder = tmp_path / "run"
    (folder / ".harness.lock").mkdir(parents=True)
    said = f"{folder / '.harness.lock'} is a folder, not the lock file that claims the run folder: remove it, or " \
           "choose another folder"
    for attempt in (check_free, claim):
        with pytest.raises(FolderInUse) as refused:
            attempt(folder, "run folder")
        assert str(refused.value) == said


@pytest.mark.e2e  # the command line in real processes (fast loop: README)
@pytest.mark.parametrize("argv,what", [(["debug=quick", "tracking=none", "hydra.run.dir={folder}"], "run folder"),
                                       (["multirun", "seed=0,1", "debug=quick", "tracking=none",
                                         "hydra.sweep.dir={folder}"], "sweep folder")])
def test_a_run_or_sweep_on_such_a_folder_is_one_line(tmp_path, argv, what):
    folder = tmp_path / "given"
    (folder / ".harness.lock").mkdir(parents=True)
    done = subprocess.run([sys.executable, "-m", "harness", *(a.format(folder=folder) for a in argv)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "HARNESS_OUTPUT_ROOT": str(tmp_path), "PYTHONPATH": str(REPO)})
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert done.stderr.splitlines() == [f"harness: error: {folder / '.harness.lock'} is a folder, not the lock file "
                                        f"that claims the {what}: remove it, or choose another folder"]
    assert sorted(p.name for p in folder.iterdir()) == [".harness.lock"]
