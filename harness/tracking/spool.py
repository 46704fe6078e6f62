"""A run's tracking records kept on disk while the tracking store is unreachable: `<run_dir>/spool/`.

    run.json      who the run is: its uid, store, experiment, name, creation tags, and its MLflow run id
                  when the run had been created before the outage
    ops.jsonl     what happened since, one JSON operation a line, in order:
                  {"op": "metrics", "step": 3, "ts": <ms>, "values": {"train/reward": 0.5, ...}}
                  {"op": "params", "values": {...}}   {"op": "tags", "values": {...}}
                  {"op": "artifact", "file": "artifacts/<id>/config.yaml", "artifact_path": null}
                  {"op": "terminate", "status": "FINISHED", "end_time": <ms>}
    artifacts/    copies of the files logged while away (the original may change later)
    synced.json   how far uploading got: {"run_id": ..., "done": <lines uploaded>, "tracking_uri": ...}

Lines are appended with one `write` each, so a process killed mid-run leaves at most a partial last line,
which readers ignore."""
from __future__ import annotations

import json
import os
import shutil
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from harness.infra.atomic_file import write_text_atomically

SPOOL_DIR = "spool"
RECORD_FILE = "run.json"
OPS_FILE = "ops.jsonl"
STATE_FILE = "synced.json"


@dataclass
class RunRecord:
    uid: str
    tracking_uri: str
    experiment_name: str
    run_name: str
    start_time: int  # ms since the epoch
    tags: Dict[str, str] = field(default_factory=dict)  # the tags to create the run with
    artifact_location: Optional[str] = None  # for the experiment, when sync has to create it
    run_id: Optional[str] = None  # set when the run exists on the store (created before the outage)


@dataclass
class SyncState:
    run_id: Optional[str] = None
    done: int = 0  # operations (lines of ops.jsonl) uploaded
    tracking_uri: Optional[str] = None  # where they went


def _write_json(path: Path, data: Dict[str, Any]) -> None:
    write_text_atomically(path, json.dumps(data, indent=1, sort_keys=True))


class Spool:
    def __init__(self, folder: Path):
        self.folder = Path(folder)

    @property
    def exists(self) -> bool:
        return (self.folder / RECORD_FILE).is_file()

    # -- writing (the tracker, while the store is away) --------------------------------------------------
    def open(self, record: RunRecord) -> None:
        """Start (or continue, for the same run) spooling; keeps an existing record of this run."""
        self.folder.mkdir(parents=True, exist_ok=True)
        if self.exists and self.record().uid == record.uid:
            return
        _write_json(self.folder / RECORD_FILE, asdict(record))

    def append(self, op: Dict[str, Any]) -> None:
        line = (json.dumps(op, sort_keys=True) + "\n").encode()
        fd = os.open(self.folder / OPS_FILE, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)

    def artifact_op(self, path: Path, artifact_path: Optional[str] = None) -> Dict[str, Any]:
        """Copy `path` into the spool now; returns the operation that uploads the copy later."""
        relative = Path("artifacts") / uuid.uuid4().hex[:12] / Path(path).name
        (self.folder / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, self.folder / relative)
        return {"op": "artifact", "file": str(relative), "artifact_path": artifact_path}

    def text_op(self, text: str, name: str) -> Dict[str, Any]:
        relative = Path("artifacts") / uuid.uuid4().hex[:12] / name
        (self.folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (self.folder / relative).write_text(text)
        return {"op": "artifact", "file": str(relative), "artifact_path": None}

    # -- reading (sync) --------------------------------------------------------------------------------
    def record(self) -> RunRecord:
        return RunRecord(**json.loads((self.folder / RECORD_FILE).read_text()))

    def ops(self, start: int = 0) -> List[Tuple[int, Dict[str, Any]]]:
        """(line index, operation) from line `start` on; an unfinished last line is left for later."""
        path = self.folder / OPS_FILE
        if not path.is_file():
            return []
        data = path.read_bytes()
        complete = data[:data.rfind(b"\n") + 1].decode().splitlines()
        return [(i, json.loads(line)) for i, line in enumerate(complete) if i >= start]

    def state(self) -> SyncState:
        path = self.folder / STATE_FILE
        return SyncState(**json.loads(path.read_text())) if path.is_file() else SyncState()

    def save_state(self, state: SyncState) -> None:
        _write_json(self.folder / STATE_FILE, asdict(state))

    def pending(self) -> int:
        """Operations not uploaded yet."""
        return len(self.ops(self.state().done))


def find_spools(folder: Path) -> List[Spool]:
    """Every spool in a run folder or a sweep folder, the sweep's own (its parent run) first."""
    folder = Path(folder)
    records = sorted(folder.rglob(f"{SPOOL_DIR}/{RECORD_FILE}"), key=lambda p: (len(p.parts), str(p)))
    return [Spool(p.parent) for p in records]
