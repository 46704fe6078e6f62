"""A run or a sweep's parent taken up again in its folder keeps its earlier attempts' errors in `history/`, not
beside the status the new attempt ends with (a continued sweep read as FINISHED runs with a KeyboardInterrupt in
their error.txt, and a sweep folder that said "the sweep stopped before all its jobs ended")."""
from __future__ import annotations

from harness.tracking.local_tracker import Tracker


def test_an_earlier_attempts_error_moves_to_history_and_the_new_attempt_ends_clean(tmp_path):
    (tmp_path / "status.txt").write_text("KILLED\n")
    (tmp_path / "error.txt").write_text("KeyboardInterrupt\n")
    tracker = Tracker(tmp_path)  # the run resumed in its folder
    assert not (tmp_path / "error.txt").exists()
    tracker.log_metrics({"train/loss": 0.5}, step=5)
    tracker.finish("FINISHED")
    assert (tmp_path / "status.txt").read_text() == "FINISHED\n" and not (tmp_path / "error.txt").exists()
    assert (tmp_path / "history" / "error-1.txt").read_text() == "KeyboardInterrupt\n"


def test_each_attempt_keeps_its_own_error(tmp_path):
    Tracker(tmp_path).finish("KILLED", "KeyboardInterrupt (first)")
    Tracker(tmp_path).finish("KILLED", "KeyboardInterrupt (second)")
    Tracker(tmp_path).finish("FAILED", "RuntimeError: boom")
    assert (tmp_path / "error.txt").read_text() == "RuntimeError: boom"
    assert [(p.name, p.read_text()) for p in sorted((tmp_path / "history").iterdir())] == \
        [("error-1.txt", "KeyboardInterrupt (first)"), ("error-2.txt", "KeyboardInterrupt (second)")]


def test_a_first_attempt_makes_no_history(tmp_path):
    Tracker(tmp_path).finish("FINISHED")
    assert not (tmp_path / "history").exists()
