"""Reading run artifacts reports need (error.txt, token_stats/step_*.npz). The run folder (tag
harness.run_dir) and a local artifact store are read directly; other stores go through MLflow's client,
one request per run that has the artifact."""
from __future__ import annotations

import logging
import re
import tempfile
import zipfile
from pathlib import Path
from typing import Dict, List, Optional, Tuple
from urllib.parse import unquote, urlparse

import numpy as np

log = logging.getLogger("harness")
STEP_FILE = re.compile(r"step_(\d+)\.npz$")
TOKEN_ARRAYS = ("nu", "masked", "entropy")


def local_artifact_dir(artifact_uri: Optional[str]) -> Optional[Path]:
    """The folder of a `file:` (or plain path) artifact URI; None for remote stores."""
    if not artifact_uri:
        return None
    parsed = urlparse(artifact_uri)
    if parsed.scheme == "file":
        return Path(unquote(parsed.path))
    if parsed.scheme == "" and artifact_uri.startswith("/"):
        return Path(artifact_uri)
    return None


def summary_line(text: str) -> str:
    """The error's one-line summary: the first line, or for a Python traceback its final exception line."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    if not lines:
        return ""
    return lines[-1] if lines[0].startswith("Traceback") else lines[0]


def error_line(client, run_id: str, run_dir: Optional[Path], artifact_uri: Optional[str]) -> Optional[str]:
    """Summary line of the run's error.txt (run folder, local artifacts, then the tracking server)."""
    candidates = [run_dir / "error.txt"] if run_dir else []
    local = local_artifact_dir(artifact_uri)
    if local:
        candidates.append(local / "error.txt")
    for path in candidates:
        if path.is_file():
            return summary_line(path.read_text(errors="replace"))
    if client is None or local is not None:
        return None
    from mlflow.exceptions import MlflowException  # a client was given: mlflow is loaded

    try:
        with tempfile.TemporaryDirectory() as tmp:
            return summary_line(Path(client.download_artifacts(run_id, "error.txt", tmp)).read_text(errors="replace"))
    except (MlflowException, OSError):  # no error.txt, or the server is unreachable: "no error.txt"
        return None


def token_stats(client, run) -> List[Tuple[int, Dict[str, np.ndarray]]]:
    """[(step, {"nu", "masked", "entropy"} arrays)] from the run's token_stats/step_*.npz, sorted by step."""
    folders = [d / "token_stats" for d in (run.run_dir, local_artifact_dir(run.artifact_uri)) if d]
    for folder in folders:
        if folder.is_dir():
            return _load([(int(m.group(1)), p) for p in folder.iterdir() if (m := STEP_FILE.search(p.name))])
    if client is None or local_artifact_dir(run.artifact_uri) is not None:
        return []
    from mlflow.exceptions import MlflowException  # a client was given: mlflow is loaded

    try:
        listed = [f.path for f in client.list_artifacts(run.run_id, "token_stats")]
        with tempfile.TemporaryDirectory() as tmp:
            files = [(int(m.group(1)), Path(client.download_artifacts(run.run_id, p, tmp)))
                     for p in listed if (m := STEP_FILE.search(p))]
            return _load(files)
    except (MlflowException, OSError, ValueError, zipfile.BadZipFile):  # unreachable, or not a token_stats file
        return []


def _load(files) -> List[Tuple[int, Dict[str, np.ndarray]]]:
    out = []
    for step, path in sorted(files):
        with np.load(path) as npz:
            if all(k in npz for k in TOKEN_ARRAYS):
                out.append((step, {k: np.asarray(npz[k]).ravel() for k in TOKEN_ARRAYS}))
    return out
