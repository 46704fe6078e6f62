"""A checkpoint cannot run code or be silently changed: a pickle planted as `last.pt` (whether or not its
checksum was updated too) and a byte changed inside a tensor are refused at preflight with one line and
exit code 2, before any run folder or tracking run is created; a checkpoint's SHA-256 is written beside it."""
from __future__ import annotations

import hashlib
import sqlite3
import zipfile
from pathlib import Path

import pytest
import torch

QUICK = ("debug=quick", "trainer.steps=2", "trainer.prompts_per_step=2")


class PlantedPayload:
    """Unpickling this calls `open(marker, "w")`: code run by whoever loads the file."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return open, (str(self.marker), "w")


def run_folders(root: Path) -> list:
    return sorted((root / "outputs").glob("*/*"))


def mlflow_run_count(root: Path) -> int:
    with sqlite3.connect(root / "mlruns.db") as conn:
        return conn.execute("SELECT count(*) FROM runs").fetchone()[0]


def write_digest(state_path: Path) -> None:
    digest = hashlib.sha256(state_path.read_bytes()).hexdigest()
    (state_path.parent / "last.pt.sha256").write_text(f"{digest}  last.pt\n")


def assert_refused_creating_nothing(run_harness, resume_dir: Path, expected: str) -> str:
    folders, runs = run_folders(run_harness.root), mlflow_run_count(run_harness.root)
    proc = run_harness(*QUICK, f"trainer.resume={resume_dir}")
    assert proc.returncode == 2, proc.stderr[-3000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], proc.stderr[-3000:]
    assert run_folders(run_harness.root) == folders, "a refused resume must create no run folder"
    assert mlflow_run_count(run_harness.root) == runs, "a refused resume must create no tracking run"
    return lines[0]


def test_checkpoint_has_its_sha256_and_no_temporary_files(run_harness):
    run_harness(*QUICK, check=True)
    (run_dir,) = run_folders(run_harness.root)
    folder = run_dir / "checkpoints"
    recorded, name = (folder / "last.pt.sha256").read_text().split()
    assert name == "last.pt" and recorded == hashlib.sha256((folder / "last.pt").read_bytes()).hexdigest()
    assert not list(folder.glob("*.tmp"))


def test_planted_pickle_runs_nothing_and_creates_nothing(run_harness, tmp_path):
    run_harness(*QUICK, check=True)
    (run_dir,) = run_folders(run_harness.root)
    state_path = run_dir / "checkpoints" / "last.pt"
    marker = tmp_path / "pwned"
    torch.save({"model": PlantedPayload(marker)}, state_path)

    assert_refused_creating_nothing(run_harness, run_dir, "does not match its SHA-256")
    assert not marker.exists()

    write_digest(state_path)  # the attacker also rewrote the checksum: the safe loader still refuses it
    assert_refused_creating_nothing(run_harness, run_dir, "not a plain-data checkpoint")
    assert not marker.exists(), "loading a checkpoint ran code planted in it"


def test_a_byte_changed_inside_a_tensor_is_noticed(run_harness):
    run_harness(*QUICK, check=True)
    (run_dir,) = run_folders(run_harness.root)
    state_path = run_dir / "checkpoints" / "last.pt"
    with zipfile.ZipFile(state_path) as archive:
        member = max((i for i in archive.infolist() if "/data/" in i.filename), key=lambda i: i.file_size)
    data = bytearray(state_path.read_bytes())
    header = member.header_offset
    name_length = int.from_bytes(data[header + 26:header + 28], "little")
    extra_length = int.from_bytes(data[header + 28:header + 30], "little")
    offset = header + 30 + name_length + extra_length + member.file_size // 2  # inside the tensor's bytes
    data[offset] ^= 0x10
    state_path.write_bytes(bytes(data))

    assert_refused_creating_nothing(run_harness, run_dir, "does not match its SHA-256")


def test_a_kill_between_the_state_and_its_checksum_leaves_a_checkpoint_that_verifies(tmp_path, monkeypatch):
    """The state and its checksum are two renames: a process killed between them (OOM killer, Slurm after its
    grace period) must leave a checkpoint that resumes, not one refused as changed after it was written."""
    from harness.trainers import checkpoint

    checkpoint.save_checkpoint(tmp_path, {"w": torch.zeros(3)}, step=1, run_id=None)
    state_path, _ = checkpoint.checkpoint_paths(tmp_path)
    first = checkpoint.file_sha256(state_path)
    real = checkpoint.write_atomically
    calls = []

    def killed_after_the_state_rename(path, write):
        calls.append(path.name)
        if len(calls) == 2:  # the checksum's final rewrite, after the new state is in place
            raise SystemExit("killed")
        real(path, write)

    monkeypatch.setattr(checkpoint, "write_atomically", killed_after_the_state_rename)
    with pytest.raises(SystemExit):
        checkpoint.save_checkpoint(tmp_path, {"w": torch.ones(3)}, step=2, run_id=None)
    assert checkpoint.file_sha256(state_path) != first  # the new state is in place, its checksum not rewritten
    checkpoint.verify_checkpoint(state_path)
    assert torch.equal(checkpoint.load_checkpoint(str(tmp_path))["w"], torch.ones(3))
    monkeypatch.setattr(checkpoint, "write_atomically", real)
    checkpoint.save_checkpoint(tmp_path, {"w": torch.full((3,), 2.0)}, step=3, run_id=None)
    assert len(checkpoint.recorded_digests(checkpoint.digest_path(state_path))) == 1  # back to one digest
    data = bytearray(state_path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    state_path.write_bytes(bytes(data))
    with pytest.raises(checkpoint.CheckpointError, match="does not match its SHA-256"):
        checkpoint.verify_checkpoint(state_path)
