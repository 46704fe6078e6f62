"""Named sweeps: which runs and why. One YAML file each in `sweeps/` (or your own `./sweeps/`, or a folder
in $HARNESS_SWEEPS), run with `python -m harness sweep <name> [overrides]`."""
