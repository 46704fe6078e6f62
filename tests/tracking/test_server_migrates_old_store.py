"""`python -m harness server` on a store written by an older MLflow: the schema is brought to the current one
before the server opens it, and the runs already in it are kept.

With MLflow 3.17 an older store lacks tables that later migrations created, so MLflow's own store migrates
it when `prepare_database` opens it; the `mlflow db upgrade` branch is for a store with every table but an
older schema revision, which MLflow's current migrations cannot produce (the newest ones add tables)."""
from __future__ import annotations

import os

import sqlalchemy

OLD_REVISION = "1a0cddfcaa16"  # MLflow's migration that adds the webhook tables (an MLflow 3.x release)


def _old_store(uri: str) -> None:
    """A store as an older MLflow left it: MLflow's initial tables, migrated only up to OLD_REVISION, with
    one experiment and one run written at that schema."""
    from alembic import command
    from alembic.config import Config
    import mlflow.store.db_migrations as migrations
    from mlflow.store.tracking.dbmodels.initial_models import Base as InitialBase

    engine = sqlalchemy.create_engine(uri)
    InitialBase.metadata.create_all(engine)
    config = Config()
    config.set_main_option("script_location", os.path.dirname(migrations.__file__))
    config.set_main_option("sqlalchemy.url", uri)
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, OLD_REVISION)
        connection.execute(sqlalchemy.text(
            "INSERT INTO experiments (experiment_id, name, artifact_location, lifecycle_stage) "
            "VALUES (7, 'old-study', '/tmp/none', 'active')"))
        connection.execute(sqlalchemy.text(
            "INSERT INTO runs (run_uuid, name, experiment_id, status, start_time, lifecycle_stage, "
            "source_type, source_name, entry_point_name, user_id, artifact_uri) "
            "VALUES ('0123456789abcdef0123456789abcdef', 'old-run', 7, 'FINISHED', 1, 'active', "
            "'LOCAL', '', '', 'someone', '/tmp/none/run')"))
    engine.dispose()


def _revision(uri: str) -> str:
    engine = sqlalchemy.create_engine(uri)
    with engine.connect() as connection:
        revision = connection.execute(sqlalchemy.text("SELECT version_num FROM alembic_version")).scalar()
    engine.dispose()
    return revision


def test_an_old_schema_is_migrated_and_its_runs_kept(tmp_path):
    from alembic.script import ScriptDirectory
    from alembic.config import Config
    import mlflow.store.db_migrations as migrations
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    from harness.tracking.server import prepare_database

    uri = f"sqlite:///{tmp_path / 'old.db'}"
    artifacts = str(tmp_path / "artifacts")
    _old_store(uri)
    assert _revision(uri) == OLD_REVISION

    prepare_database(uri, artifacts)
    config = Config()
    config.set_main_option("script_location", os.path.dirname(migrations.__file__))
    assert _revision(uri) == ScriptDirectory.from_config(config).get_current_head() != OLD_REVISION

    store = SqlAlchemyStore(uri, artifacts)
    old = store.get_run("0123456789abcdef0123456789abcdef")
    assert old.info.run_name == "old-run" and old.info.experiment_id == "7"
    experiment = store.create_experiment("after-migration")
    run = store.create_run(experiment, "someone", 2, [], "new-run")
    assert store.get_run(run.info.run_id).info.run_name == "new-run"
    prepare_database(uri, artifacts)  # an up-to-date store: opened as it is
    assert store.get_run(run.info.run_id).info.run_name == "new-run"
