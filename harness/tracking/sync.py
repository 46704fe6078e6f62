"""`python -m harness sync <run_folder|sweep_folder> ...`: upload spooled tracking records exactly once
(`harness.tracking.upload`), then name the jobs whose run the store lacks with nothing spooled."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import List

from harness.infra.run_record import job_folders, run_id_of
from harness.tracking.outage import describe, store_errors
from harness.tracking.params import scrub
from harness.tracking.spool import SPOOL_DIR, Spool, find_spools
from harness.tracking.store import default_uri
from harness.tracking.store_check import StoreFault, check_store
from harness.tracking.stored_uri import UriNeeded
from harness.tracking.upload import SpoolUpload, UploadSummary


def _describe(spool: Spool, s: UploadSummary) -> str:
    run = f"run {s.run_id} ({'created' if s.created else 'existing'})"
    parts = [f"{s.metrics} metric points sent"]
    if s.already_there:
        parts.append(f"{s.already_there} already on the server")
    if s.artifacts:
        parts.append(f"{s.artifacts} artifacts")
    if s.rejected:
        parts.append(f"{s.rejected} refused")
    if s.status:
        parts.append(f"status {s.status}")
    return f"synced {spool.folder.parent}: {run}, " + ", ".join(parts)


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness sync",
                                     description="Upload tracking records spooled during an outage.")
    parser.add_argument("folders", nargs="+", type=Path, help="run folders or sweep folders")
    parser.add_argument("--tracking-uri", help="upload here instead of the store each run was meant for")
    args = parser.parse_args(argv)
    os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")  # one summary line a run instead
    if args.tracking_uri:
        try:
            check_store(args.tracking_uri)
        except StoreFault as err:
            print(f"harness sync: error: {err} (nothing lost: run sync again once it is back)", file=sys.stderr)
            return 2
    failed = 0
    for folder in args.folders:
        if not folder.is_dir():
            print(f"harness sync: error: folder={str(folder)!r} is not allowed: not a folder "
                  "(give a run folder or a sweep folder)", file=sys.stderr)
            return 2
        spools = find_spools(folder)
        if not spools:
            print(f"nothing to sync in {folder}: no spool/ (every record reached the store)")
        for spool in spools:
            try:
                upload = SpoolUpload(spool, tracking_uri=args.tracking_uri)
                check_store(upload.target)
                if upload.is_synced():
                    print(f"already synced: {spool.folder.parent} (run {upload.state().run_id})")
                    continue
                summary = upload.upload()
            except UriNeeded as err:
                failed += 1
                print(f"harness sync: {spool.folder.parent}: {err}", file=sys.stderr)
                continue
            except StoreFault as err:
                failed += 1
                print(f"harness sync: {spool.folder.parent}: {err} (nothing lost: run sync again later)", file=sys.stderr)
                continue
            except Exception as err:  # the command's boundary: one spool's failure is one line, the next goes on
                failed += 1
                uri = scrub(args.tracking_uri or spool.record().tracking_uri)
                print(f"harness sync: {spool.folder.parent}: {uri} unreachable ({describe(err)}); "
                      "nothing lost, run sync again later", file=sys.stderr)
                continue
            print(_describe(spool, summary))
    missing = _missing(args)
    for job in missing:
        print(f"harness sync: {job} is missing from the store and has no spool to upload: its folder holds "
              "what it recorded", file=sys.stderr)
    return 1 if failed or missing else 0


def _missing(args) -> List[str]:
    """Jobs whose run the store lacks with nothing spooled (asked of --tracking-uri, else MLFLOW_TRACKING_URI,
    else the default store; nothing said when none of them can be read)."""
    from mlflow.tracking import MlflowClient  # mlflow loads in seconds: not for `sync --help`

    uri = args.tracking_uri or os.environ.get("MLFLOW_TRACKING_URI") or default_uri()
    try:
        check_store(uri)
        if uri.startswith("sqlite:///") and not Path(uri[len("sqlite:///"):]).is_file():
            return []
        return jobs_missing_from(MlflowClient(tracking_uri=uri), args.folders)
    except StoreFault:
        return []


def jobs_missing_from(client, folders: List[Path]) -> List[str]:
    """The job folders (of the given run or sweep folders) whose recorded run the store at `client` lacks."""
    missing = []
    for folder in folders:
        for job in job_folders(folder):
            run_id = run_id_of(job)
            if run_id is None or (job / SPOOL_DIR).is_dir():
                continue  # nothing to tell by, or its spool says it (sync uploads it)
            try:
                client.get_run(run_id)
            except store_errors() as err:  # MLflow's RESOURCE_DOES_NOT_EXIST; any other failure is not "missing"
                if "RESOURCE_DOES_NOT_EXIST" in str(getattr(err, "error_code", "")) or "not found" in str(err):
                    missing.append(f"{job} (mlflow run {run_id})")
    return missing
