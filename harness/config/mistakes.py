"""A mistyped command line in one line, with the nearest valid spelling (harness/config/names.py), before Hydra's
parser prints its usage or a composition fails far from the mistake: a misspelt command (`multirn`), an override
written as an option (`--algo=dppo`), a flag Hydra does not know, a list given to a config group (`algo=[dppo,drpo]`,
which Hydra merges into one run where a sweep was meant: harness/config/compose_errors.py)."""
from __future__ import annotations

from typing import Iterable, List

from harness.config.flags import HARNESS_FLAGS, NEW_SWEEP_FLAG, PLAN_FLAG, VERBOSE_FLAGS, YES_FLAG
from harness.config.names import GROUPS, did_you_mean

# Hydra's own command-line flags (hydra/_internal/utils.py: get_args_parser), beside the harness's
HYDRA_FLAGS = ("--help", "--hydra-help", "--version", "--cfg", "--resolve", "--package", "--run", "--multirun",
               "--shell-completion", "--config-path", "--config-name", "--config-dir", "--experimental-rerun",
               "--info")
FLAGS = (PLAN_FLAG, NEW_SWEEP_FLAG, YES_FLAG, *HARNESS_FLAGS, *VERBOSE_FLAGS, *HYDRA_FLAGS)
# the top-level keys a user sets most (conf/config.yaml's shortcuts), besides the config groups
SHORTCUTS = ("delta", "alpha", "anchor", "seed", "output_root", "cache_dir", "force")


def unknown_command(word: str, commands: Iterable[str]) -> str:
    """The one line for a first word that is not a command: `multirn algo=dppo` reads as a misspelt command, not
    as an override Hydra cannot parse."""
    commands = list(commands)
    hint = did_you_mean(word, commands, "'{}'")
    return (f"unknown command '{word}', {hint.strip()}" if hint else
            f"unknown command '{word}': overrides are written key=value; commands: {', '.join(commands)}")


def unknown_flag(arg: str) -> str:
    """The one line for a flag Hydra's parser does not know: an override written as an option (`--algo=dppo`,
    `--seed 3`), or a misspelt flag."""
    name, eq, value = arg.lstrip("-").partition("=")
    key = name.replace("-", "_")
    if eq and (key.split(".")[0] in (*GROUPS, *SHORTCUTS) or "." in key or name not in _flag_names()):
        return f"options are written key=value, without dashes: did you mean {key}={value}?"
    if key.split(".")[0] in (*GROUPS, *SHORTCUTS):  # `--seed 3`
        return f"options are written key=value, without dashes: did you mean {key}=…?"
    hint = did_you_mean(arg.split("=")[0], FLAGS)
    return (f"unknown option '{arg}'" + (f": {hint.strip()}" if hint else
                                         "; overrides are written key=value, without dashes (python -m harness help "
                                         "lists the flags)"))


def _flag_names() -> List[str]:
    return [flag.lstrip("-") for flag in FLAGS]
