"""A mistyped name gets every equally close valid name, closest first by a real edit distance, and the same
words everywhere: a config choice, a report kind, a named sweep."""
from __future__ import annotations

from harness.cli import run_cli
from harness.config.names import did_you_mean, edit_distance, nearest_names
from harness.reports.cli import main as report_main
from harness.sweeps.command import main as sweep_main


def test_edit_distance_counts_insertions_deletions_substitutions_and_swaps():
    assert edit_distance("dpo", "dppo") == edit_distance("dpo", "drpo") == edit_distance("dpo", "spo") == 1
    assert edit_distance("bf61", "bf16") == 1 and edit_distance("stpes", "steps") == 1
    assert edit_distance("", "abc") == 3 and edit_distance("kitten", "sitting") == 3


def test_every_equally_close_name_is_offered_and_only_those():
    algos = ["bandpo", "dppo", "drpo", "grpo", "spo", "mask_spo"]
    assert nearest_names("dpo", algos) == ["dppo", "drpo"], "spo changes a third of its name, not a quarter"
    assert nearest_names("drp", algos) == ["drpo"]
    assert nearest_names("DRPO", algos) == ["drpo"]
    assert nearest_names("xyz", algos) == [] and did_you_mean("xyz", algos) == ""
    assert did_you_mean("dpo", algos, "algo={}") == "did you mean algo=dppo or algo=drpo? "
    assert did_you_mean("sp", ["spo", "sppo", "spa"]) == "did you mean spo or spa? "
    assert did_you_mean("ab", ["abc", "abd", "abe"]) == "did you mean abc, abd or abe? "


def test_a_mistyped_choice_kind_or_sweep_gets_the_nearest_names(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_OUTPUT_ROOT", str(tmp_path))
    assert run_cli(["algo=dpo"]) == 2
    assert "did you mean algo=dppo or algo=drpo? allowed:" in capsys.readouterr().err

    for target in ([], [str(tmp_path)]):  # said before anything else, with or without a sweep to report on
        assert report_main([*target, "--kind", "sensitivty"]) == 2
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and "'sensitivty' is not a report kind; did you mean sensitivity? known:" in err

    assert sweep_main(["delta_sensitivty"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "'delta_sensitivty' does not exist; did you mean delta_sensitivity? " in err
    assert not any(tmp_path.iterdir()), "a refusal creates nothing"
