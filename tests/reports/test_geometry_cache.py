"""The geometry report's weight grids come from a disk cache keyed on everything they depend on: a hit
gives the computed grid back without importing torch; any change of objective, parameters, sign, grid or
library code is a miss; an unreadable entry is computed again; `off` caches nothing."""
from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest

from harness.reports.rendering import geometry_cache
from harness.reports.rendering.geometry_cache import cached_grid

GRID = np.linspace(0.01, 1.0, 8)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_GEOMETRY_CACHE", str(tmp_path / "geometry"))
    return tmp_path / "geometry"


def _computer(calls, value=1.0):
    def compute():
        calls.append(1)
        return np.full((len(GRID), len(GRID)), value) * np.arange(len(GRID))
    return compute


def test_a_hit_returns_the_computed_grid_without_computing(cache):
    calls = []
    first = cached_grid("dppo", 1.0, {"delta": 0.1}, GRID, _computer(calls))
    again = cached_grid("dppo", 1.0, {"delta": 0.1}, GRID, _computer(calls, value=99.0))
    assert calls == [1] and np.array_equal(first, again) and again.dtype == np.float64


@pytest.mark.parametrize("change", [
    dict(objective="drpo"), dict(sign=-1.0), dict(params={"delta": 0.2}),
    dict(params={"delta": 0.1, "divergence": "binary_tv"}), dict(grid=np.linspace(0.01, 1.0, 9)),
])
def test_anything_the_grid_depends_on_is_part_of_the_key(cache, change):
    base = dict(objective="dppo", sign=1.0, params={"delta": 0.1}, grid=GRID)
    calls = []
    cached_grid(*base.values(), _computer(calls))
    changed = {**base, **change}
    cached_grid(*changed.values(), _computer(calls))
    assert calls == [1, 1]


def test_a_change_of_the_library_code_is_a_miss(cache, monkeypatch):
    calls = []
    cached_grid("dppo", 1.0, {"delta": 0.1}, GRID, _computer(calls))
    monkeypatch.setattr(geometry_cache, "_LIBRARY", ["another version of harness/algorithms"])
    cached_grid("dppo", 1.0, {"delta": 0.1}, GRID, _computer(calls))
    assert calls == [1, 1]


def test_an_unreadable_entry_is_computed_again_and_replaced(cache):
    calls = []
    cached_grid("dppo", 1.0, {"delta": 0.1}, GRID, _computer(calls))
    (entry,) = cache.glob("*.npy")
    entry.write_bytes(b"not a numpy file")
    value = cached_grid("dppo", 1.0, {"delta": 0.1}, GRID, _computer(calls, value=2.0))
    assert calls == [1, 1] and value[0, 1] == 2.0
    assert np.array_equal(cached_grid("dppo", 1.0, {"delta": 0.1}, GRID, _computer(calls)), value)
    assert calls == [1, 1]


def test_errors_are_raised_and_nothing_is_stored(cache):
    def refuse():
        raise ValueError("algo.anchor='recompute' is not allowed here")

    with pytest.raises(ValueError, match="anchor"):
        cached_grid("dppo", 1.0, {"anchor": "recompute"}, GRID, refuse)
    assert not list(cache.glob("*.npy"))


def test_off_caches_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_GEOMETRY_CACHE", "off")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    calls = []
    for _ in range(2):
        cached_grid("dppo", 1.0, {"delta": 0.1}, GRID, _computer(calls))
    assert calls == [1, 1] and not any(tmp_path.rglob("*.npy"))


def test_a_rebuilt_geometry_report_does_not_import_torch(real_sweeps, built, tmp_path):
    """The session's reports filled the cache (conftest points it at a session folder); building the
    δ sweep's geometry page again, in a fresh process and into another folder, reads every grid from it."""
    folder = real_sweeps["delta"]
    code = ("import sys; from harness.reports.results.locate import from_sweep_dir; "
            "from harness.reports.results.collect import collect; from harness.reports.rendering.build import build_from_data; "
            f"build_from_data(collect(from_sweep_dir({str(folder)!r})), ['geometry'], {str(tmp_path)!r}, "
            "log_parent=False); print('torch' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().splitlines()[-1] == "False"
    before = (folder / "reports" / "geometry" / "summary.md").read_text()
    after = (tmp_path / "geometry" / "summary.md").read_text()
    assert _undated(after) == _undated(before)  # the same figures and key numbers


def _undated(text: str) -> str:
    return re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d", "<time>", text)
