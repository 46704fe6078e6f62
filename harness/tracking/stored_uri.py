"""Store URIs written to disk (a sweep's `parent_run.json`, a spool's `record.json` and `synced.json`) carry no
password: they are written masked, and a later process that must connect gets the full URI back from what
it was given (`--tracking-uri`, its own config) or from `MLFLOW_TRACKING_URI`, when that masks to the same
text."""
from __future__ import annotations

import os
from typing import Optional

from harness.infra.secrets import MASK, scrub


class UriNeeded(ValueError):
    """A URI on disk was written masked and nothing given unmasks it."""


def on_disk(uri: str) -> str:
    """What is written to disk for `uri`: its password and secret values masked."""
    return scrub(uri)


def same_store(stored: Optional[str], uri: Optional[str]) -> bool:
    """Whether `uri` (full) is the store that `stored` (as written to disk) names."""
    return stored is not None and uri is not None and on_disk(uri) == on_disk(stored)


def reconnect(stored: str, *given: Optional[str]) -> str:
    """The full URI of the store written as `stored`: `stored` itself when nothing was masked in it, else the
    first of `given`, then `MLFLOW_TRACKING_URI`, that names the same store."""
    if MASK not in stored:
        return stored
    for candidate in (*given, os.environ.get("MLFLOW_TRACKING_URI")):
        if candidate and same_store(stored, candidate):
            return candidate
    raise UriNeeded(f"the store {stored} was written without its password; give its full URI with "
                    "MLFLOW_TRACKING_URI (or --tracking-uri)")

