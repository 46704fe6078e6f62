"""The command line of a run or sweep read in one place: the harness's own flags (`read_flags`: the command's
`Options`, the flags that become overrides, `-v`) and Hydra's, with Hydra's own parser (`parse_hydra_args`), so
the harness reads `-m`, `--cfg`, `--info` and overrides exactly as Hydra does (Hydra exposes its parser only from
an internal module, imported when the line is parsed: reading the harness's flags imports nothing heavy)."""
from __future__ import annotations

import argparse
from typing import List, Tuple

from harness.config.errors import ConfigError  # imports nothing
from harness.config.flags import (HARNESS_FLAGS, INFORMING_FLAGS, NEW_SWEEP_FLAG, PLAN_FLAG, VERBOSE_FLAGS,
                                  VERBOSE_OVERRIDE, YES_FLAG, Options)


def read_flags(argv: List[str]) -> Tuple[Options, List[str]]:
    """The options `argv` gives, and `argv` without them (the harness's other flags become their overrides, at
    the end; `-v` becomes Hydra's `hydra.verbose=harness`)."""
    options = Options(plan=PLAN_FLAG in argv, new_sweep=NEW_SWEEP_FLAG in argv, any_size=YES_FLAG in argv)
    kept = [a for a in argv if a not in (PLAN_FLAG, NEW_SWEEP_FLAG, YES_FLAG, *VERBOSE_FLAGS, *HARNESS_FLAGS)]
    added = [HARNESS_FLAGS[a] for a in argv if a in HARNESS_FLAGS]
    verbose = [VERBOSE_OVERRIDE] if set(VERBOSE_FLAGS) & set(argv) else []
    return options, kept + added + verbose


def asks_auto(overrides: List[str]) -> bool:
    """seed=auto or a budget.* key: seeds in rounds until the reports decide (harness/sweeps/auto_study.py)."""
    keys = [(o.partition("=")[0].lstrip("+~"), o.partition("=")[2].strip()) for o in overrides]
    return any((key == "seed" and value == "auto") or key.startswith("budget.") for key, value in keys)


def informs_only(argv: List[str]) -> bool:
    """A Hydra flag that prints something and runs nothing."""
    return any(a in INFORMING_FLAGS or a.startswith(("--cfg=", "--info=")) for a in argv)


def parse_hydra_args(argv: List[str]) -> argparse.Namespace:
    from hydra._internal.utils import get_args_parser  # loaded with the command line, not on every plugin scan

    args, unknown = get_args_parser().parse_known_args(argv)
    flags = [a for a in unknown if a.startswith("-")]
    if flags:  # Hydra's parser would print its 8-line usage naming __main__.py
        from harness.config.mistakes import unknown_flag

        raise ConfigError(unknown_flag(flags[0]))
    return get_args_parser().parse_args(argv) if unknown else args  # argparse's own words for the rest
