"""Reading runs: what a sweep holds, read once per report (`collect.collect` -> `data.SweepData`).

Where a report target points (`locate`: a sweep folder, a sweep id or a run id, its store and output folder);
the runs from MLflow in one paged query with their metric histories in bulk (`collect`, `history_sql` for a
SQLite store, `history_rest` for a server) or from the job folders alone (`local`); the jobs the store lacks
(`missing`); run artifacts (`artifacts`); each run's key numbers (`summary`) and which parameter is its
objective's threshold (`thresholds`). `synthetic` writes a sweep into a real store for tests and benchmarks.
Nothing here decides or draws."""
