"""The README's commands work after its set-up as written: it says once, up front, how to activate the venv its
set-up made; and `python -m harness` run by a Python without the harness's dependencies (no venv) says in one
line what to install, for every command (not `help` working and a run ending in ModuleNotFoundError)."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from pty_screen import screen

ROOT = Path(__file__).resolve().parents[2]


def test_the_readme_says_how_to_activate_the_venv_before_its_first_command():
    readme = (ROOT / "README.md").read_text()
    setup = readme.split("## Set up on a fresh machine", 1)[1].split("\n## ", 1)[0]
    assert "python3 -m venv .venv" in setup
    assert ". .venv/bin/activate" in setup, "the set-up section says how to activate the venv it made"
    first_bare = readme.index("python -m harness", readme.index("## Set up on a fresh machine"))
    assert readme.index(". .venv/bin/activate") < readme.index("## Run") and first_bare < readme.index("## Run")


@pytest.mark.parametrize("args", [("debug=quick",), ("help",), ("algos",), ("multirun", "algo=dppo,drpo")])
def test_a_python_without_the_dependencies_gets_one_line_naming_what_to_install(args):
    # -S: no site-packages (the venv's hydra, omegaconf, torch, ...); the package itself from the repository folder
    code, shown, _ = screen([sys.executable, "-S", "-m", "harness", *args], ROOT, {"PATH": "/usr/bin:/bin"}, timeout=60)
    assert code == 2, shown
    assert len(shown) == 1 and "Traceback" not in shown[0], shown
    assert re.search(r"no module 'hydra'.*\. \.venv/bin/activate.*pip install -e \.", shown[0]), shown
