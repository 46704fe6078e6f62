"""A mistyped command line in one line, with the nearest valid spelling (harness/config/names.py), before Hydra's
parser prints its usage or a composition fails far from the mistake: a misspelt command (`multirn`), an override
written as an option (`--algo=dppo`), a flag Hydra does not know, a list given to a config group (`algo=[dppo,drpo]`,
which Hydra merges into one run where a sweep was meant)."""
from __future__ import annotations

from typing import Iterable, List, Optional, Sequence

from harness.config.errors import ConfigError
from harness.config.flags import HARNESS_FLAGS, NEW_SWEEP_FLAG, PLAN_FLAG, VERBOSE_FLAGS, YES_FLAG
from harness.config.names import GROUPS, did_you_mean

# Hydra's own command-line flags (hydra/_internal/utils.py: get_args_parser), beside the harness's
HYDRA_FLAGS = ("--help", "--hydra-help", "--version", "--cfg", "--resolve", "--package", "--run", "--multirun",
               "--shell-completion", "--config-path", "--config-name", "--config-dir", "--experimental-rerun",
               "--info")
FLAGS = (PLAN_FLAG, NEW_SWEEP_FLAG, YES_FLAG, *HARNESS_FLAGS, *VERBOSE_FLAGS, *HYDRA_FLAGS)
# the top-level keys a user sets most (conf/config.yaml's shortcuts), besides the config groups
SHORTCUTS = ("delta", "alpha", "anchor", "seed", "output_root", "cache_dir", "force")


def check_command(argv: Sequence[str], commands: Iterable[str]) -> None:
    """ConfigError for a first word that is neither an override nor a flag nor a command: `multirn algo=dppo`
    reads as a misspelt command, not as an override Hydra cannot parse."""
    word = argv[0] if argv else ""
    if not word or "=" in word or word.startswith(("-", "+", "~")):
        return
    commands = list(commands)
    hint = did_you_mean(word, commands, "'{}'")
    raise ConfigError(f"unknown command '{word}', {hint.strip()}" if hint else
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


def refuse_group_lists(parsed: Sequence, multirun: bool) -> None:
    """ConfigError for a config group given a list (`algo=[dppo,drpo]`): Hydra would merge every option of the
    list into one run (DRPO's parameters on DPPO's objective), where a sweep over them was meant."""
    for override in parsed:
        group = override.key_or_group.lstrip("+~")
        if group not in GROUPS or override.is_sweep_override() or not isinstance(override.value(), list):
            continue
        options = ",".join(str(v) for v in override.value())
        how = f"{group}={options}" if multirun else f"multirun {group}={options}"
        raise ConfigError(f"{override.input_line} is a list: Hydra would merge these {group} options into one run; "
                          f"a sweep over them is written {how} (no brackets)")
