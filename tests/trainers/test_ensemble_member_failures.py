"""A member's failure of any kind ends that member alone: sampling that cannot draw (a temperature that rounds
to 0 in float32), an error its objective raises (a memory error among them), its tracker failing. Its
partner goes on and logs exactly what it logs alone."""
from __future__ import annotations

import pytest

from test_ensemble_trainer import assert_close_records, records, spec, train
from harness.tracking.local_tracker import Tracker
from harness.trainers.ensemble import loop
from harness.trainers.ensemble.trainer import EnsembleTrainer

PARTNER = ("dppo", 0.1, 0)
OTHER = ("drpo", 0.2, 1)


@pytest.fixture(scope="module")
def partner_alone(tmp_path_factory, warm_cache):
    folder = tmp_path_factory.mktemp("alone")
    train([spec(folder, warm_cache, *PARTNER, "precision=fp32")], folder)
    return records(folder / "0")


def _raise_from_step_two(error: BaseException):
    def patch(trainer, member, monkeypatch):
        objective_class = type(member.objective)  # drpo: the member's own kind (its partner's is dppo)
        surrogate = objective_class._surrogate

        def failing(self, batch):  # computed for the members of that kind at once, or for one member alone
            if trainer.step >= 1:
                raise error
            return surrogate(self, batch)

        monkeypatch.setattr(objective_class, "_surrogate", failing)
    return patch


def _store_fails_at_step_two(trainer, member, monkeypatch):
    log_metrics = member.tracker.log_metrics

    def failing(metrics, step):
        if step == 2:
            raise OSError("tracking store unreachable")
        return log_metrics(metrics, step=step)

    member.tracker.log_metrics = failing


CASES = {
    "temperature 1e-300": (("trainer.temperature=1e-300",), None, RuntimeError, "sampling failed in the evaluation at step 0"),
    "temperature 1e-45": (("trainer.temperature=1e-45",), None, RuntimeError, "sampling failed in the evaluation at step 0"),
    "memory error": ((), _raise_from_step_two(MemoryError("out of memory")), MemoryError, "out of memory"),
    "raised error": ((), _raise_from_step_two(ValueError("objective broke")), ValueError, "objective broke"),
    "tracker": ((), _store_fails_at_step_two, OSError, "tracking store unreachable"),
}


@pytest.mark.parametrize("case", CASES)
def test_a_member_that_fails_ends_alone_and_its_partner_logs_what_it_logs_alone(tmp_path, warm_cache, partner_alone,
                                                                                  case, monkeypatch):
    extra, patch, error_type, message = CASES[case]
    specs = [spec(tmp_path, warm_cache, *PARTNER, "precision=fp32"),
             spec(tmp_path, warm_cache, *OTHER, "precision=fp32", *extra)]
    trainer = EnsembleTrainer([(s, tmp_path / str(k), Tracker(tmp_path / str(k))) for k, s in enumerate(specs)])
    if patch is not None:
        patch(trainer, trainer.members[1], monkeypatch)
    loop.train(trainer)
    partner, failed = trainer.members
    assert isinstance(failed.error, error_type) and message in str(failed.error), repr(failed.error)
    assert partner.alive and partner.final
    partner.tracker.finish("FINISHED")
    assert_close_records(records(tmp_path / "0"), partner_alone)
