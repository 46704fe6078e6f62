"""Checkpoints that resume a run exactly: the state goes to `<run_dir>/checkpoints/last.pt` (atomic
rename), its SHA-256 to `last.pt.sha256` beside it (`sha256sum -c` format; while a new state replaces the
old one it lists both) and a small `last.json` says the
step and the tracking run to continue. `CheckpointWriter` writes them on a background thread, in order,
after the tracking flush they wait for.

A checkpoint holds only tensors, numbers, strings and plain containers, and is read back with
`torch.load(weights_only=True)`: a pickle planted in a run folder cannot run code. Its SHA-256 is checked
first, so a changed byte (even inside a tensor) is refused with one line, before anything is loaded."""
from __future__ import annotations

import copy
import hashlib
import json
import os
import threading
from pathlib import Path
from typing import Any, Dict, Optional

from harness.infra.atomic_file import write_atomically

CHECKPOINT_DIR = "checkpoints"


DIGEST_SUFFIX = ".sha256"


class CheckpointError(ValueError):
    """A checkpoint that must not be loaded (missing, changed, or not plain data); the message is one line."""


def checkpoint_paths(run_dir: Path) -> tuple[Path, Path]:
    folder = Path(run_dir) / CHECKPOINT_DIR
    return folder / "last.pt", folder / "last.json"


def digest_path(state_path: Path) -> Path:
    return state_path.with_name(state_path.name + DIGEST_SUFFIX)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def save_checkpoint(run_dir: Path, state: Dict[str, Any], step: int, run_id: Optional[str]) -> Path:
    import torch

    state_path, meta_path = checkpoint_paths(run_dir)
    state_path.parent.mkdir(parents=True, exist_ok=True)
    digest_file = digest_path(state_path)
    tmp = state_path.with_name(state_path.name + ".tmp")
    try:
        # our own file object: a failed save (disk full) closes it at once, so removing the partial file frees
        # its space before the run's end is recorded (torch's writer on a path stays open with the traceback)
        with open(tmp, "wb") as handle:
            torch.save(state, handle)
        new = file_sha256(tmp)
        # the old and the new digest are both listed while the state is swapped, so a kill between the two
        # renames leaves a checkpoint that verifies (old or new state), never one that reads as tampered with
        both = dict.fromkeys([new, *recorded_digests(digest_file)])
        write_atomically(digest_file, lambda t: t.write_text("".join(f"{d}  {state_path.name}\n" for d in both)))
        os.replace(tmp, state_path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    write_atomically(digest_file, lambda t: t.write_text(f"{new}  {state_path.name}\n"))
    meta = {"step": step, "run_id": run_id}
    config = Path(run_dir) / "config.yaml"
    if config.is_file():  # ties the checkpoint to its folder's own record (checked by harness.launchers.folder_claims)
        meta["config_sha256"] = file_sha256(config)
    write_atomically(meta_path, lambda tmp: tmp.write_text(json.dumps(meta)))
    return state_path


def find_checkpoint(resume: str, key: str = "trainer.resume") -> Path:
    """`resume` is a run folder or a checkpoint file."""
    path = Path(resume).expanduser()
    candidate = path if path.suffix == ".pt" else checkpoint_paths(path)[0]
    if candidate.is_file():
        return candidate
    if not path.exists():
        raise CheckpointError(f"{key}={resume!r} is not allowed: no such folder")
    raise CheckpointError(f"{key}={resume!r} is not allowed: not a run folder with a checkpoint "
                          f"(no {candidate})")


def recorded_digests(digest_file: Path) -> list:
    """The SHA-256 digests a checksum file lists (one per line, `sha256sum` format); [] if it is unreadable."""
    try:
        return [line.split()[0] for line in digest_file.read_text().splitlines() if line.strip()]
    except (OSError, UnicodeDecodeError):
        return []


def verify_checkpoint(state_path: Path, key: str = "trainer.resume") -> None:
    """Refuse a checkpoint whose bytes are not the ones its run wrote (or whose checksum is missing)."""
    recorded_path = digest_path(state_path)
    if not recorded_path.is_file():
        raise CheckpointError(f"{key}: {state_path} has no checksum ({recorded_path.name}); refusing to load it")
    if file_sha256(state_path) not in recorded_digests(recorded_path):
        raise CheckpointError(f"{key}: {state_path} does not match its SHA-256 ({recorded_path.name}): "
                              "changed after it was written; refusing to load it")


def load_checkpoint(resume: str, key: str = "trainer.resume") -> Dict[str, Any]:
    """The verified state of a checkpoint, read without running any code it may hold."""
    import pickle

    import torch

    state_path = find_checkpoint(resume, key)
    verify_checkpoint(state_path, key)
    try:
        return torch.load(state_path, map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError) as err:
        reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise CheckpointError(f"{key}: {state_path} is not a plain-data checkpoint, refusing to load it "
                              f"({reason})") from None


def _meta(source: str) -> Dict[str, Any]:
    """The record beside the checkpoint of `source` (a run folder or checkpoint file); {} if there is none."""
    meta = find_checkpoint(source).with_suffix(".json")
    return json.loads(meta.read_text()) if meta.is_file() else {}


def resumed_run_id(resume: Optional[str]) -> Optional[str]:
    """The tracking run a job with `trainer.resume=<resume>` continues (None for a fresh run: no `resume`)."""
    return _meta(str(resume)).get("run_id") if resume else None


def checkpoint_step(source: str) -> int:
    """The step the checkpoint of `source` (a run folder or checkpoint file) was written at."""
    return int(_meta(source).get("step", 0))


def snapshot(state: Any, copy_tensors: bool = True) -> Any:
    """A copy of a state tree whose tensors are in CPU memory (a GPU's tensors are copied off it before the
    write) and, with copy_tensors, share no memory with the live model and optimizer."""
    import torch

    if isinstance(state, torch.Tensor):
        return state.detach().to("cpu", copy=copy_tensors)
    if isinstance(state, dict):
        return {key: snapshot(value, copy_tensors) for key, value in state.items()}
    if isinstance(state, (list, tuple)):
        return type(state)(snapshot(value, copy_tensors) for value in state)
    return copy.deepcopy(state)


class CheckpointWriter:
    """Saves checkpoints one at a time, in step order. Each waits for `before_write` (the tracking flush:
    a checkpoint never claims steps the store lacks) and then goes to disk; in the background (the
    default) the loop only pays for a copy of the state (to the CPU), and the next save or `wait()` joins the write
    before it and raises its error. A process killed mid-write keeps the previous checkpoint (atomic rename)."""

    def __init__(self, run_dir: Path, before_write: Callable[[], None], run_id: Callable[[], Optional[str]],
                 background: bool = True):
        self.run_dir, self.before_write, self.run_id, self.background = Path(run_dir), before_write, run_id, background
        self._thread: Optional[threading.Thread] = None
        self._error: Optional[BaseException] = None

    def save(self, state: Dict[str, Any], step: int) -> None:
        self.wait()
        if not self.background:
            self._write(snapshot(state, copy_tensors=False), step)
            return
        self._thread = threading.Thread(target=self._write_noting_error, args=(snapshot(state), step),
                                        name=f"harness-checkpoint-{step}")
        self._thread.start()

    def wait(self, raise_error: bool = True) -> None:
        """Return once the checkpoint in flight is on disk; raise the error it met, if any."""
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        error, self._error = self._error, None
        if error is not None and raise_error:
            raise error

    def _write_noting_error(self, state: Dict[str, Any], step: int) -> None:
        try:
            self._write(state, step)
        except BaseException as err:  # re-raised in the training thread by the next save or wait()
            self._error = err

    def _write(self, state: Dict[str, Any], step: int) -> None:
        self.before_write()
        save_checkpoint(self.run_dir, state, step, self.run_id())
