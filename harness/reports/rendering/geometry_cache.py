"""A disk cache of the geometry report's weight grids. A grid is a pure function of the objective, its
parameters, the advantage sign, the probability grid and the algorithm library's code; computing one
imports torch, which costs a sweep's driver (which builds the reports and otherwise never needs torch)
2-3 s. HARNESS_GEOMETRY_CACHE: the folder (default $XDG_CACHE_HOME/harness/geometry), or `off`."""
from __future__ import annotations

import hashlib
import io
from pathlib import Path
from typing import Any, Callable, Dict, Optional

import numpy as np

import harness.algorithms
from harness.infra.disk_cache import cache_folder, read_entry, write_entry

FORMAT = 1  # bump when the entry format or the key's recipe changes
MAX_ENTRIES = 512  # ~200 KB each
_LIBRARY: list = []  # the library code's digest, read once per process


def library_digest() -> str:
    """Digest of every source file of harness.algorithms (what a weight grid is computed by)."""
    if not _LIBRARY:
        digest = hashlib.blake2b(str(FORMAT).encode(), digest_size=20)
        for path in sorted(Path(harness.algorithms.__file__).parent.rglob("*.py")):
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
        _LIBRARY.append(digest.hexdigest())
    return _LIBRARY[0]


def grid_key(objective: str, sign: float, params: Dict[str, Any], grid: np.ndarray) -> str:
    digest = hashlib.blake2b(library_digest().encode(), digest_size=20)
    digest.update(repr((objective, float(sign), sorted((str(k), repr(v)) for k, v in params.items()))).encode())
    digest.update(np.ascontiguousarray(grid, dtype=np.float64).tobytes())
    return digest.hexdigest()


def cached_grid(objective: str, sign: float, params: Dict[str, Any], grid: np.ndarray,
                compute: Callable[[], np.ndarray]) -> np.ndarray:
    """The weight grid from the cache, else `compute()` (stored for next time; its errors are raised)."""
    folder: Optional[str] = cache_folder("HARNESS_GEOMETRY_CACHE", "geometry")
    name = grid_key(objective, sign, params, grid) + ".npy"
    data = read_entry(folder, name)
    if data is not None:
        try:
            return np.load(io.BytesIO(data), allow_pickle=False)
        except (ValueError, OSError, EOFError):
            pass  # unreadable: computed again and replaced
    weight = compute()
    buffer = io.BytesIO()
    np.save(buffer, np.asarray(weight, dtype=np.float64), allow_pickle=False)
    write_entry(folder, name, buffer.getvalue(), MAX_ENTRIES)
    return weight
