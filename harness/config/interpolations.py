"""Interpolations a run config cannot resolve, and paths that would be read as one, refused in one line naming the
key before anything starts (issue #50, case 12), instead of OmegaConf's traceback from wherever the value is first
read: an override holding `${...}` that names no key (`trainer.lr=${lr}`), an environment variable that is not set
(`${oc.env:A5LR}`), and an output root whose path holds `${` (a folder named `price${x}`: Hydra stores the run
folder's path as a config value, where `${x}` would be resolved as an interpolation), or a folder name longer than
its file system takes (case 13: said here for a sweep, its `--plan` and a run alike)."""
from __future__ import annotations

import os
import re
from typing import Any, Optional

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from harness.config.errors import ConfigError

ENV_MISSING = re.compile(r"Environment variable '([^']*)' not found")
KEY_MISSING = re.compile(r"Interpolation key '([^']*)' not found")


def unresolvable(err: OmegaConfBaseException) -> str:
    """The one line for an interpolation that validation could not resolve: the key, its value, and why."""
    key = getattr(err, "full_key", None) or "a value"
    raw = None
    parent = getattr(err, "parent_node", None)
    if isinstance(parent, DictConfig):
        raw = OmegaConf.to_container(parent, resolve=False).get(str(key).rpartition(".")[2])
    return _describe(str(key), raw, err)


def check_output_root(root: Optional[str]) -> None:
    """ConfigError when the run's output root `root` (as given, or the current folder it stands for) holds `${`, or a
    folder name longer than its file system takes."""
    if root is None:
        return
    where = os.path.abspath(os.path.expanduser(str(root)))
    given = f"output_root={root}" if str(root) == where else f"output_root={root} ({where})"
    longest = _name_max(where)
    for part in where.split(os.sep):
        if len(os.fsencode(part)) > longest:
            raise ConfigError(f"{given} is not allowed: its folder name {part[:24]}… is {len(os.fsencode(part))} "
                              f"bytes long, more than the file system takes ({longest}); choose a shorter one")
    if "${" in where:
        raise ConfigError(f"{given} is not allowed: a folder path holding '${{' would be read as an interpolation "
                          "where Hydra keeps the run folders' paths; choose an output root without '${' (rename the "
                          "folder, or set HARNESS_OUTPUT_ROOT or output_root=...)")


def _name_max(path: str) -> int:
    """The longest file name the file system at `path` (its nearest existing folder) takes."""
    place = path
    while not os.path.isdir(place) and os.path.dirname(place) != place:
        place = os.path.dirname(place)
    try:
        return os.pathconf(place, "PC_NAME_MAX")
    except (OSError, ValueError):
        return 255


def _describe(key: str, raw: Any, err: OmegaConfBaseException) -> str:
    text = str(err)
    head = f"{key}={raw!r} cannot be resolved" if raw is not None else f"{key} cannot be resolved"
    env = ENV_MISSING.search(text)
    if env:
        name = env.group(1)
        return (f"{head}: the environment variable {name} is not set (set it, or give a default: "
                f"${{oc.env:{name},<default>}})")
    missing = KEY_MISSING.search(text)
    if missing:
        return (f"{head}: no key {missing.group(1)!r} in the config (${{key}} reads another key of the config; "
                "write \\${ for a literal ${)")
    first = text.strip().splitlines()[0] if text.strip() else type(err).__name__
    return f"{head}: {first}"
