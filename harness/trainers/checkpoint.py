"""Checkpoints that resume a run exactly: the state goes to `<run_dir>/checkpoints/last.pt` (atomic
rename) and a small `last.json` beside it says the step and the tracking run to continue.
`CheckpointWriter` writes them on a background thread, in order, after the tracking flush they wait for."""
from __future__ import annotations

import copy
import json
import os
import threading
from pathlib import Path
from typing import Any, Callable, Dict, Optional

CHECKPOINT_DIR = "checkpoints"


def checkpoint_paths(run_dir: Path) -> tuple[Path, Path]:
    folder = Path(run_dir) / CHECKPOINT_DIR
    return folder / "last.pt", folder / "last.json"


def save_checkpoint(run_dir: Path, state: Dict[str, Any], step: int, run_id: Optional[str]) -> Path:
    import torch

    state_path, meta_path = checkpoint_paths(run_dir)
    state_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = state_path.with_suffix(".pt.tmp")
    torch.save(state, tmp)
    os.replace(tmp, state_path)
    meta_tmp = meta_path.with_suffix(".json.tmp")
    meta_tmp.write_text(json.dumps({"step": step, "run_id": run_id}))
    os.replace(meta_tmp, meta_path)
    return state_path


def find_checkpoint(resume: str) -> Path:
    """`resume` is a run folder or a checkpoint file."""
    path = Path(resume).expanduser()
    candidates = [path] if path.suffix == ".pt" else [checkpoint_paths(path)[0]]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"trainer.resume={resume!r}: no checkpoint found (looked for {candidates[0]})")


def load_checkpoint(resume: str) -> Dict[str, Any]:
    import torch

    return torch.load(find_checkpoint(resume), map_location="cpu", weights_only=False)


def resumed_run_id(cfg) -> Optional[str]:
    """The tracking run a resumed job continues (None for a fresh run)."""
    if not cfg.trainer.get("resume"):
        return None
    meta = find_checkpoint(cfg.trainer.resume).with_suffix(".json")
    return json.loads(meta.read_text()).get("run_id") if meta.is_file() else None


def snapshot(state: Any) -> Any:
    """A copy of a state tree whose tensors share no memory with the live model and optimizer."""
    import torch

    if isinstance(state, torch.Tensor):
        return state.detach().clone()
    if isinstance(state, dict):
        return {key: snapshot(value) for key, value in state.items()}
    if isinstance(state, (list, tuple)):
        return type(state)(snapshot(value) for value in state)
    return copy.deepcopy(state)


class CheckpointWriter:
    """Saves checkpoints one at a time, in step order. Each waits for `before_write` (the tracking flush:
    a checkpoint never claims steps the store lacks) and then goes to disk; in the background (the
    default) the loop only pays for a copy of the state, and the next save or `wait()` joins the write
    before it and raises its error. A process killed mid-write keeps the previous checkpoint (atomic rename)."""

    def __init__(self, run_dir: Path, before_write: Callable[[], None], run_id: Callable[[], Optional[str]],
                 background: bool = True):
        self.run_dir, self.before_write, self.run_id, self.background = Path(run_dir), before_write, run_id, background
        self._thread: Optional[threading.Thread] = None
        self._error: Optional[BaseException] = None

    def save(self, state: Dict[str, Any], step: int) -> None:
        self.wait()
        if not self.background:
            self._write(state, step)
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
