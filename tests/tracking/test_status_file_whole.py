"""A run's `status.txt` is read while it is written (`harness status`, a launcher collecting a job, a second
sweep's preflight): a reader sees a whole status or the file's absence, never an empty or half-written one."""
from __future__ import annotations

import threading

from harness.tracking.local_tracker import Tracker


def test_a_reader_never_sees_a_half_written_status(tmp_path):
    tracker = Tracker(tmp_path)
    seen, stop = set(), threading.Event()

    def read_while_written() -> None:
        while not stop.is_set():
            try:
                seen.add((tmp_path / "status.txt").read_text())
            except FileNotFoundError:
                seen.add(None)

    reader = threading.Thread(target=read_while_written)
    reader.start()
    try:
        for i in range(3000):  # as a requeued or resumed run ends again in the same folder
            tracker.finish("FINISHED" if i % 2 else "KILLED", error=None if i % 2 else "killed")
    finally:
        stop.set()
        reader.join()
    assert seen <= {None, "FINISHED\n", "KILLED\n"}, f"a reader saw {sorted(map(repr, seen))}"
    assert "KILLED\n" in seen or "FINISHED\n" in seen, "the reader read nothing while the status was written"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["error.txt", "status.txt"], "no temporary file left"
