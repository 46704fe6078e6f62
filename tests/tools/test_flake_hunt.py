""".ci/flake_hunt.py: runs chosen tests N times beside a busy process and lists every test that ever failed, with
how often, exiting 1 if any did."""
from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # pytest runs in subprocesses, several times

HUNT = Path(__file__).resolve().parents[2] / ".ci" / "flake_hunt.py"

FLAKY = '''
import os
from pathlib import Path


def test_fails_on_odd_runs():
    counter = Path(os.environ["FLAKE_HUNT_COUNTER"])
    runs = int(counter.read_text()) + 1 if counter.exists() else 1
    counter.write_text(str(runs))
    assert runs % 2 == 0


def test_steady():
    pass
'''


def _hunt():
    spec = importlib.util.spec_from_file_location("flake_hunt", HUNT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_a_test_that_fails_by_chance_is_listed_with_its_count(tmp_path, monkeypatch, capsys):
    tests = tmp_path / "suite"
    tests.mkdir()
    (tests / "test_flaky.py").write_text(FLAKY)
    monkeypatch.setenv("FLAKE_HUNT_COUNTER", str(tmp_path / "counter"))
    code = _hunt().main([str(tests), "--runs", "3", "--stress", "1", "--keep", str(tmp_path / "logs")])
    out = capsys.readouterr().out
    assert code == 1, out
    assert "2 tests x 3 runs under stress 1: 2 failures in 1 tests" in out
    # a test's id as JUnit names it: its module's dotted path from pytest's rootdir, which depends on where it runs
    assert re.search(r"^  2/3  \S*test_flaky::test_fails_on_odd_runs$", out, re.MULTILINE), out
    assert "test_steady" not in out
    assert [line.split(":")[0] for line in out.splitlines() if line.startswith("run ")] == ["run 1/3", "run 2/3",
                                                                                          "run 3/3"]
    assert sorted(p.name for p in (tmp_path / "logs").iterdir()) == [f"run{i}.{ext}" for i in (1, 2, 3)
                                                                    for ext in ("log", "xml")]


def test_no_failure_exits_0(tmp_path, capsys):
    (tmp_path / "test_fine.py").write_text("def test_fine():\n    pass\n")
    assert _hunt().main([str(tmp_path / "test_fine.py"), "--runs", "2", "--stress", "0"]) == 0
    assert "1 tests x 2 runs under stress 0: 0 failures in 0 tests" in capsys.readouterr().out
