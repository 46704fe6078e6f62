"""Checkpoints written on a background thread hold the state of the step they were taken at, go to disk
only after the tracking flush, in step order, and a failed write surfaces in the training thread."""
from __future__ import annotations

import json
import threading

import pytest
import torch

from harness.trainers.checkpoint import CheckpointWriter, checkpoint_paths, load_checkpoint


def _state(model, optimizer, step):
    return {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step,
            "rng": {"state": [1, 2, 3]}}


@pytest.fixture
def trained():
    model = torch.nn.Linear(4, 2)
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.1)
    model(torch.ones(1, 4)).sum().backward()
    optimizer.step()
    return model, optimizer


def test_background_checkpoint_holds_the_state_of_its_step(tmp_path, trained):
    model, optimizer = trained
    release = threading.Event()
    writer = CheckpointWriter(tmp_path, before_write=release.wait, run_id=lambda: "run-1")
    weight = model.weight.detach().clone()
    moment = optimizer.state_dict()["state"][0]["exp_avg"].clone()
    writer.save(_state(model, optimizer, 3), 3)
    with torch.no_grad():  # training goes on while the write waits for the flush
        model.weight.add_(5.0)
    optimizer.zero_grad()
    model(torch.ones(1, 4)).sum().backward()
    optimizer.step()
    assert not checkpoint_paths(tmp_path)[0].exists(), "written before the tracking flush returned"
    release.set()
    writer.wait()
    saved = load_checkpoint(str(tmp_path))
    assert torch.equal(saved["model"]["weight"], weight)
    assert torch.equal(saved["optimizer"]["state"][0]["exp_avg"], moment)
    assert saved["step"] == 3 and saved["rng"] == {"state": [1, 2, 3]}
    assert json.loads(checkpoint_paths(tmp_path)[1].read_text()) == {"step": 3, "run_id": "run-1"}


def test_saves_are_written_one_at_a_time_in_order(tmp_path, trained):
    model, optimizer = trained
    order, in_flight = [], []

    def flush():
        in_flight.append(1)
        assert len(in_flight) == 1, "two writes at once"
        order.append(json.loads(checkpoint_paths(tmp_path)[1].read_text())["step"]
                     if checkpoint_paths(tmp_path)[1].exists() else None)
        in_flight.pop()

    writer = CheckpointWriter(tmp_path, before_write=flush, run_id=lambda: None)
    for step in (10, 20, 30):
        writer.save(_state(model, optimizer, step), step)
    writer.wait()
    assert order == [None, 10, 20]  # each write found the one before it on disk
    assert load_checkpoint(str(tmp_path))["step"] == 30


def test_a_failed_write_is_raised_in_the_training_thread(tmp_path, trained):
    model, optimizer = trained

    def flush():
        raise OSError("tracking store unreachable")

    writer = CheckpointWriter(tmp_path, before_write=flush, run_id=lambda: None)
    writer.save(_state(model, optimizer, 1), 1)
    with pytest.raises(OSError, match="unreachable"):
        writer.save(_state(model, optimizer, 2), 2)
    writer.wait(raise_error=False)  # the second one's error, swallowed on the way out of a stopped run
    writer.wait()


def test_foreground_writer_writes_before_save_returns(tmp_path, trained):
    model, optimizer = trained
    threads = []
    writer = CheckpointWriter(tmp_path, before_write=lambda: threads.append(threading.current_thread()),
                              run_id=lambda: "r", background=False)
    writer.save(_state(model, optimizer, 5), 5)
    assert threads == [threading.main_thread()]
    assert load_checkpoint(str(tmp_path))["step"] == 5
