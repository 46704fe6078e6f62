"""A sealed study is pinned to its store, its experiment and its resolved values (issue 50, cases 1 and 2):
`--continue` from another output root, with another `tracking.uri=`, under another MLFLOW_EXPERIMENT_NAME,
after its store was deleted, or with an `${oc.env:...}` in its sweep file resolving to another value, is
refused in one line before anything runs. A real study on debug=quick (one arm, two 2-step runs), stopped
by its minutes budget after its first round, real processes and a real MLflow store."""
from __future__ import annotations

import os

import pytest
import yaml

from test_sealed_study import STUDY, Study, _refused

pytestmark = pytest.mark.e2e  # the command line in subprocesses, real runs or pages (fast loop: README)

PINNED = STUDY.replace("trainer.steps=2]", "trainer.steps=2, 'trainer.lr=${oc.env:A5LR,0.0003}']")


@pytest.fixture(scope="module")
def study(tmp_path_factory) -> Study:
    return Study(tmp_path_factory.mktemp("pinned"), PINNED)


def test_a_study_records_its_store_experiment_and_resolved_values(study):
    pins = study.state()["pins"]
    assert pins["store"] == f"sqlite:///{study.root / 'mlruns.db'}"
    assert pins["experiment"] == "slow"  # a named sweep's own experiment
    assert pins["values"]["trainer.lr"] == ["0.0003"] and "seed" not in pins["values"]


def test_a_study_continued_elsewhere_is_refused(study, tmp_path):
    before = study.listing()
    _refused(study.cont(f"tracking.uri=sqlite:///{tmp_path / 'other.db'}"), "records to the store", "other.db")
    _refused(study.cont(env={"HARNESS_OUTPUT_ROOT": str(tmp_path)}), "records to the store",
             str(tmp_path / "mlruns.db"))  # from another folder: another default store
    _refused(study.cont("tracking.experiment=elsewhere"), "to experiment 'elsewhere'")
    assert study.listing() == before and not (tmp_path / "other.db").exists()


def test_a_study_whose_store_was_deleted_is_refused(study, tmp_path):
    store = study.root / "mlruns.db"
    before = study.listing()
    os.rename(store, tmp_path / "away.db")
    try:
        _refused(study.cont(), "is gone (deleted)")
        assert not store.exists()
    finally:
        os.rename(tmp_path / "away.db", store)
    assert study.listing() == before


def test_the_seal_compares_resolved_values_not_the_files_text(study):
    before = study.listing()
    _refused(study.cont(env={"A5LR": "0.05"}), "the design's values changed", "trainer.lr", "0.05")
    assert study.listing() == before
    state = yaml.safe_load((study.folder / "adaptive.yaml").read_text())
    assert state["pins"]["values"]["trainer.lr"] == ["0.0003"]
