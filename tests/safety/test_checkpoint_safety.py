"""A checkpoint cannot run code or be silently changed: a pickle planted as `last.pt` (whether or not its
checksum was updated too) and a byte changed inside a tensor are refused at preflight with one line and
exit code 2, before any run folder or tracking run is created; a checkpoint's SHA-256 is written beside it."""
from __future__ import annotations

import hashlib
import sqlite3
import zipfile
from pathlib import Path

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
