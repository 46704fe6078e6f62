"""Hydra's multi-line composition and parse errors as one line for the user, naming the key and suggesting the
nearest valid name."""
from __future__ import annotations

import re
import unicodedata
from typing import List, Sequence

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from harness.config.errors import ConfigError
from harness.config.names import CONFIG_NAME, GROUPS, did_you_mean, group_options
from harness.config.schema import RunConfig
from harness.infra.extensions import broken_note

REGISTERED_GROUPS = ("algo", "launcher")  # groups an installed extension can add choices to


def parse_overrides(overrides: Sequence[str]) -> list:
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parser = OverridesParser.create()
    parsed = []
    for item in overrides:  # one at a time, to name the one that does not parse
        try:
            parsed.extend(parser.parse_overrides([item]))
        except Exception as err:  # Hydra's OverrideParseException: several lines and a lexer's name
            raise ConfigError(describe_parse_error(item, err)) from None
    return parsed


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def describe_parse_error(item: str, err: Exception) -> str:
    """One line for an override Hydra's lexer or parser refuses, with the nearest valid spelling."""
    key, eq, value = item.partition("=")
    odd = [c for c in item if ord(c) > 127 and not c.isspace()]
    if odd:
        names = ", ".join(f"{c!r} ({unicodedata.name(c, 'U+%04X' % ord(c))})" for c in dict.fromkeys(odd))
        reason = f"contains {names}, which an override cannot hold outside quotes"
    else:
        reason = re.sub(r"\s+", " ", _first_line(err)).replace("LexerNoViableAltException: ", "")
    hint = ""
    bare_key = key.lstrip("+~")
    ascii_value = "".join(c for c in value if ord(c) < 128)
    if bare_key in GROUPS and eq:
        hint = did_you_mean(value, group_options(bare_key), f"{bare_key}={{}}")
        if not hint and ascii_value != value:
            hint = did_you_mean(ascii_value, group_options(bare_key), f"{bare_key}={{}}")
    elif any(ord(c) > 127 for c in key):
        hint = did_you_mean(key, GROUPS)
    return f"cannot parse override {item!r}: {reason}" + (f"; {hint.strip()}" if hint else "")


def describe_composition_error(err: Exception, overrides: Sequence[str]) -> str:
    from hydra.errors import MissingConfigException, OverrideParseException

    if isinstance(err, OverrideParseException):
        parse_overrides(overrides)  # raises, naming the override that does not parse

    chain: List[BaseException] = []
    e: BaseException | None = err
    while e is not None and e not in chain:
        chain.append(e)
        e = e.__cause__ or e.__context__
    for e in chain:
        if isinstance(e, MissingConfigException) and e.options is not None and e.missing_cfg_file:
            group, _, choice = e.missing_cfg_file.rpartition("/")
            options = sorted(o for o in e.options if not o.startswith("_"))
            return (f"{group}={choice} is not a known choice; {did_you_mean(choice, options, f'{group}={{}}')}"
                    f"allowed: {', '.join(options)}{broken_note() if group in REGISTERED_GROUPS else ''}")
    text = "\n".join(str(e) for e in chain)
    full_key = re.search(r"full_key: ([\w.\[\]]+)", text)
    key = full_key.group(1) if full_key else None
    if "not in struct" in text or "Key '" in text and "not in" in text:
        bad = key or _missing_key(text)
        if bad and bad.startswith("hydra.sweeper.params."):  # Hydra adds keys to a node only with `+`
            return (f"{bad} is a new key: add search dimensions with '+hydra.sweeper.params={{key: \"float(lo,hi)\", "
                    "...}' (Hydra adds keys to a node only with +)")
        if bad and bad.startswith("trainer.verl.") and not _has_node("trainer.verl", overrides):
            # e.g. --dry-run on the built-in trainer
            what = (" (--dry-run prints the verl command and batch script without running them)"
                    if bad == "trainer.verl.dry_run" else "")
            return f"{bad} applies to trainer=verl only{what}; the built-in trainer has no such key"
        siblings = _sibling_keys(bad, overrides)
        leaf = bad.rpartition(".")[2]
        parent = bad.rpartition(".")[0]
        hint = did_you_mean(leaf, siblings, f"{parent}.{{}}" if parent else "{}")
        return f"unknown key '{bad}'; {hint}allowed: {', '.join(siblings) or 'see `python -m harness --cfg job`'}"
    if "could not be converted" in text or "Value '" in text:
        m = (re.search(r"Value '([^']*)' (?:of type '\w+' )?could not be converted to (\w+)", text)
             or re.search(r"Value '([^']*)' is not a valid (\w+)", text))
        if m:
            return f"{key}={m.group(1)!r} has the wrong type: expected {m.group(2).lower()}"
    if "Could not find" in text:
        m = re.search(r"Could not find '([^']+)'", text)
        if m:
            return f"{m.group(1)} is not a known config"
    return _first_line(err)


def _sibling_keys(bad_key: str, overrides: Sequence[str]) -> List[str]:
    """The keys that do exist next to a misspelt one: the fields of its node's schema, or (for the untyped
    `algo` node and the like) the keys of the config composed with the same choices."""
    import dataclasses
    import typing

    node: object = RunConfig
    for part in bad_key.split(".")[:-1]:
        hints = typing.get_type_hints(node) if dataclasses.is_dataclass(node) else {}
        node = hints.get(part)
    if dataclasses.is_dataclass(node):
        return [f.name for f in dataclasses.fields(node)]
    parent = bad_key.rpartition(".")[0]
    found = _composed_with_choices(overrides)
    try:
        found = OmegaConf.select(found, parent) if parent else found
        return sorted(str(k) for k in found.keys())
    except (AttributeError, OmegaConfBaseException):  # nothing composed, or no such node: no suggestion
        return []


def _composed_with_choices(overrides: Sequence[str]) -> "DictConfig | None":
    """The config composed with only the group choices among `overrides` (None if even that fails)."""
    from hydra import compose as hydra_compose

    try:
        return hydra_compose(config_name=CONFIG_NAME, overrides=[o for o in overrides if o.split("=")[0] in GROUPS])
    except Exception:  # any composition error (Hydra's several kinds): the message goes without a suggestion
        return None


def _has_node(key: str, overrides: Sequence[str]) -> bool:
    """Whether the config composed with the same group choices (e.g. trainer=verl, or an experiment that
    selects it) has a non-empty node `key`."""
    found = _composed_with_choices(overrides)
    return found is not None and bool(OmegaConf.select(found, key))


def _missing_key(text: str) -> str:
    m = re.search(r"Could not override '([^']+)'", text) or re.search(r"Key '([^']+)'", text)
    return m.group(1) if m else "?"


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
