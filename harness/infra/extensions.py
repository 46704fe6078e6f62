"""Extensions installed outside the repository: the modules that installed distributions name in the
`harness.extensions` entry-point group (the way pytest and Hydra find their plugins), imported once per process
when the `harness` package is (harness/__init__.py). Their `register_objective` / `register_launcher` calls
have then run before any registry is read, in the command's process, its worker processes and Slurm jobs alike.

A distribution declares one in its pyproject.toml:

    [project.entry-points."harness.extensions"]
    my_objectives = "my_package.register"
"""
from __future__ import annotations

import sys
from importlib.metadata import entry_points

GROUP = "harness.extensions"


def load_extensions() -> None:
    """Import each entry point's module; one that fails ends the process with one line naming it (exit 2)."""
    for point in entry_points(group=GROUP):
        try:
            point.load()
        except Exception as err:  # noqa: BLE001 (whatever the module raises: the line names it)
            source = f" of {point.dist.name}" if point.dist is not None else ""
            first = str(err).strip().splitlines()[0] if str(err).strip() else ""
            sys.stderr.write(f"harness: error: entry point {point.name} = {point.value!r}{source} (group {GROUP}) "
                             f"cannot be loaded: {type(err).__name__}: {first}\n")
            raise SystemExit(2) from None
