"""The CLI explains itself: a short help page (not Hydra's config dump), every tool's --help, listings exit 0."""
from __future__ import annotations

import subprocess
import sys

import pytest

from harness.cli import TOOLS

COMMANDS = ("run", "multirun", *TOOLS, "help")


def plain(run_harness, *args: str) -> subprocess.CompletedProcess:
    """`python -m harness <args>` exactly (the fixture's runner adds cache_dir= to commands with overrides)."""
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=run_harness.root, env=run_harness.env(),
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("args", [("help",), ("--help",), ("-h",), ("run", "--help"), ("multirun", "--help"),
                                  ("algo=drpo", "--help")])
def test_help_is_a_short_page_of_the_commands(run_harness, args):
    proc = run_harness(*args)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert 10 <= len(lines) <= 30, proc.stdout
    listed = {line.split()[0] for line in lines if line.startswith("  ") and line.split()}
    assert set(COMMANDS) <= listed, f"commands without a line: {set(COMMANDS) - listed}"
    examples = [line for line in lines if line.startswith("  python -m harness ")]
    assert len(examples) == 4, examples
    assert any(e.split("#")[0].split()[3:] == ["sweep", "claim1_sanity"] for e in examples), "no example decides"
    assert "docs/algorithms.md" in proc.stdout and "README.md" in proc.stdout
    for boilerplate in ("Powered by Hydra", "== Config ==", "defaults:", "Error parsing override"):
        assert boilerplate not in proc.stdout + proc.stderr


def test_hydra_help_and_the_config_dump_stay_reachable(run_harness):
    hydra_help = plain(run_harness, "--hydra-help")
    assert hydra_help.returncode == 0 and "Hydra" in hydra_help.stdout
    dump = run_harness("--cfg", "job", "algo=drpo")
    assert dump.returncode == 0 and "name: drpo" in dump.stdout


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_every_tool_explains_its_arguments(run_harness, tool):
    for args in ((tool, "--help"), ("help", tool)):
        proc = run_harness(*args)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.startswith("usage: python -m harness " + tool), proc.stdout[:300]
        assert len(proc.stdout.splitlines()) >= 3


def test_sweep_without_a_name_lists_the_named_sweeps_and_succeeds(run_harness):
    proc = plain(run_harness, "sweep")
    assert proc.returncode == 0, proc.stderr
    assert "delta_sensitivity" in proc.stdout and "claim1_sanity" in proc.stdout
    assert plain(run_harness, "sweep", "--bogus").returncode == 2


def test_report_list_succeeds(run_harness):
    proc = run_harness("report", "--list")
    assert proc.returncode == 0 and "sensitivity" in proc.stdout
    nothing_yet = run_harness("report")  # no target: the sweeps under the output root
    assert nothing_yet.returncode == 0 and "no sweeps under" in nothing_yet.stdout
