"""An adaptive study's state file (`adaptive.yaml`), edited by hand or damaged, is refused by `--continue` in one
line naming the file, the key and what is allowed, before anything runs; never a traceback."""
from __future__ import annotations

import pytest

from harness.cli import run_cli
from harness.sweeps.adaptive import saved_state

GOOD = "sweep: claim1_sanity\nuser: []\nflags: []\ndone: 2\n"


def test_a_well_formed_state_is_read_and_no_file_is_no_study(tmp_path):
    assert saved_state(tmp_path) is None
    (tmp_path / "adaptive.yaml").write_text(GOOD)
    assert saved_state(tmp_path) == {"sweep": "claim1_sanity", "user": [], "flags": [], "done": 2}


@pytest.mark.parametrize("text, words", [
    (GOOD.replace("done: 2", "done: abc"), ["done is 'abc'", "a whole number of rounds ≥ 0"]),
    (GOOD.replace("done: 2", "done: -1"), ["done is -1"]),
    (GOOD.replace("done: 2\n", ""), ["done is missing"]),
    (GOOD.replace("user: []", "user: seed=3"), ["user is 'seed=3'", "a list of overrides"]),
    (GOOD.replace("sweep: claim1_sanity", "sweep: [1, 2]"), ["sweep is [1, 2]", "a sweep name"]),
    ("- just\n- a list\n", ["is not a mapping of sweep, user, flags, done"]),
    ("sweep: [unclosed\n", ["cannot be read"]),
    (GOOD + "final: maybe\n", ["final is 'maybe'", "true or false"]),
    (GOOD + "stopped: [1]\n", ["stopped is [1]", "a text"]),
    (GOOD + "design: [grids]\n", ["design is ['grids']", "a mapping"]),
])
def test_a_malformed_state_is_refused_in_one_line(tmp_path, capsys, monkeypatch, text, words):
    monkeypatch.setenv("HARNESS_OUTPUT_ROOT", str(tmp_path))
    (tmp_path / "adaptive.yaml").write_text(text)
    with pytest.raises(ValueError) as raised:
        saved_state(tmp_path)
    assert all(word in str(raised.value) for word in words), raised.value
    assert run_cli(["sweep", "claim1_sanity", f"--continue={tmp_path}"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("harness: error: sweep claim1_sanity: --continue "), err
    assert str(tmp_path / "adaptive.yaml") in err and all(word in err for word in words), err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adaptive.yaml"]  # nothing ran, nothing was made
