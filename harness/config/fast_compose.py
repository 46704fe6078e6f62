"""Compose a run's config (without the `hydra` node) the way Hydra does, without Hydra, for the shapes this
conf tree uses; None for anything else, and Hydra composes it (and words its errors).

Hydra's composition of one run costs more than importing Hydra itself: it also composes its own `hydra`
node (a dozen configs), builds an ANTLR override parser and runs its defaults-list machinery. What a job's
config needs is far less, and this follows Hydra's rules for it step by step:
* choices: the primary defaults list, then the command line's `group=option`, then the `override /group:
  option` entries of the selected configs, visited last entry first, the first setting of a group winning
  (Hydra's `Overrides.add_override`); an override key is the group, plus `@package` when its final package
  is not the group's default one;
* merge: each selected config, embedded at its package (`# @package _global_` or the group's path), merged
  in defaults-list order into an empty config (`merge_with`), the primary's own body at `_self_`;
* then struct mode and `key=value` overrides through `OmegaConf.update(..., merge=True)`.
Handled: defaults entries `name` (a schema of `ROOT_SCHEMAS`), `group: option|null` and `_self_` in the
primary, and only `override /group[@package]: option` entries in group configs; overrides `group=option`
and `key=value` with a plain value (Hydra's null / bool / int / float / unquoted-identifier rules). Anything else (`+`, `~`,
quotes, lists, interpolations, `hydra.*`, an unknown key or option, a search path, a header other than
`_global_`, a plugin adding search paths) returns None. tests/config/test_fast_compose.py checks the result
against Hydra's for every option of every group and every sweep's jobs, node types and flags included.
"""
from __future__ import annotations

import functools
import os
import re
from typing import Dict, List, Optional, Sequence, Tuple

from omegaconf import DictConfig, OmegaConf, flag_override

from harness.config.schema import ROOT_SCHEMAS

_NAME = r"[A-Za-z_][\w]*"
_KEY = re.compile(rf"^{_NAME}(?:\.{_NAME})*$", re.ASCII)
_GROUP_OVERRIDE = re.compile(r"^override\s+/([\w/]+?)(?:@([\w.]+))?$", re.ASCII)
_INT = re.compile(r"^[+-]?(?:0|[1-9](?:_?[0-9])*)$")
_DIGITS = r"[0-9](?:_?[0-9])*"
_POINT_FLOAT = rf"(?:(?:{_DIGITS})?\.{_DIGITS}|{_DIGITS}\.)"
_FLOAT = re.compile(rf"^[+-]?(?:{_POINT_FLOAT}|(?:{_POINT_FLOAT}|{_DIGITS})[eE][+-]?[0-9]+)$")
_STRING = re.compile(r"^[A-Za-z_/.][\w\-./]*$", re.ASCII)


def compose_without_hydra(overrides: Sequence[str]) -> Optional[DictConfig]:
    tree = _tree()
    if tree is None:
        return None
    parsed = _parse_overrides(overrides, tree)
    if parsed is None:
        return None
    choices, values = parsed
    entries = _selected_entries(tree, choices)
    if entries is None:
        return None
    cfg = OmegaConf.create()
    with flag_override(cfg, "no_deepcopy_set_nodes", True):
        for package, body in entries:
            if package:
                wrapped = OmegaConf.create()
                OmegaConf.update(wrapped, package, body, merge=False)
                body = wrapped
            cfg.merge_with(body)
    OmegaConf.set_struct(cfg, True)
    try:
        for key, value in values:
            OmegaConf.update(cfg, key, value, merge=True)
    except Exception:
        return None  # Hydra composes it again and words the error
    return cfg


class _Tree:
    """The conf folder's config groups and each group's options."""

    def __init__(self, conf: str):
        self.conf = conf
        self.groups = {d: {f[:-5] for f in os.listdir(os.path.join(conf, d)) if f.endswith(".yaml")}
                       for d in sorted(os.listdir(conf))
                       if os.path.isdir(os.path.join(conf, d)) and not d.startswith(("_", "."))}

    def option_exists(self, group: str, option: str) -> bool:
        return option in self.groups.get(group, ())


@functools.lru_cache(maxsize=1)
def _tree() -> Optional[_Tree]:
    import harness.conf

    if _plugins_add_search_paths():
        return None
    tree = _Tree(os.path.dirname(harness.conf.__file__))
    primary = _load(os.path.join(tree.conf, "config.yaml"))
    if primary is None or "searchpath" in repr(primary[1].get("hydra")):
        return None
    return tree


def _plugins_add_search_paths() -> bool:
    """A SearchPathPlugin (any installed package may ship one) adds config folders only Hydra searches."""
    from harness.config.compose_cache import hydra_plugin_files

    for path in hydra_plugin_files():
        if path.endswith(".py"):
            with open(path, encoding="utf-8", errors="replace") as f:
                if "SearchPathPlugin" in f.read():
                    return True
    return False


def _load(path: str) -> Optional[Tuple[Optional[str], dict, list]]:
    """(package header, body without defaults, defaults list) of a YAML config, or None if out of scope;
    parsed again when the file changes (as Hydra reads it on every composition)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return _parse(path, st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=256)
def _parse(path: str, mtime_ns: int, size: int) -> Optional[Tuple[Optional[str], dict, list]]:
    with open(path, encoding="utf-8") as f:
        text = f.read()
    header = _package_header(text)
    if header is False:
        return None
    data = OmegaConf.to_container(OmegaConf.create(text), resolve=False) if text.strip() else {}
    if not isinstance(data, dict):
        return None
    body = dict(data)
    defaults = body.pop("defaults", [])
    return header, body, defaults if isinstance(defaults, list) else None


def _package_header(text: str):
    """The `# @package` value (None: none given), or False for headers this module does not handle."""
    package = None
    for line in text[:512].splitlines():  # Hydra reads the header from the first 512 characters
        line = line.strip()
        if not line:
            continue
        if not re.match(r"^\s*#\s*@", line):
            break
        parts = line.lstrip("#").split()
        if len(parts) != 2 or parts[0] != "@package" or parts[1] != "_global_":
            return False
        package = parts[1]
    return package


def _parse_overrides(overrides: Sequence[str], tree: _Tree):
    """(group choices, [(key, value)]) from plain overrides, or None."""
    choices: Dict[str, str] = {}
    values: List[Tuple[str, object]] = []
    seen = set()
    for item in overrides:
        key, eq, text = item.partition("=")
        if not eq or key in seen or not _KEY.match(key) or key.split(".")[0] == "hydra":
            return None
        seen.add(key)
        if key in tree.groups:
            if not tree.option_exists(key, text):
                return None  # Hydra refuses `group=null` on the command line, and words an unknown option
            choices[key] = text
            continue
        value = _value(text)
        if value is _OUT_OF_SCOPE:
            return None
        values.append((key, value))
    return choices, values


_OUT_OF_SCOPE = object()


def _value(text: str):
    """A command-line value as Hydra's override grammar reads a single plain token."""
    lowered = text.lower()
    if lowered == "null":
        return None
    if lowered in ("true", "false"):
        return lowered == "true"
    if _INT.match(text):
        return int(text.replace("_", ""))
    if _FLOAT.match(text):
        return float(text.replace("_", ""))
    if _STRING.match(text) and lowered not in ("inf", "nan"):
        return text
    return _OUT_OF_SCOPE


def _selected_entries(tree: _Tree, external: Dict[str, str]):
    """[(package, body config)] in merge order, after Hydra's choice rules; None if out of scope."""
    primary = _load(os.path.join(tree.conf, "config.yaml"))
    if primary is None or primary[2] is None:
        return None
    _, primary_body, primary_defaults = primary
    entries = []  # (kind, name, choice): kind "group", "schema" or "self"
    for item in primary_defaults:
        if item == "_self_":
            entries.append(("self", None, None))
        elif isinstance(item, str) and item in ROOT_SCHEMAS:
            entries.append(("schema", item, None))
        elif isinstance(item, dict) and len(item) == 1:
            (group, choice), = item.items()
            if group not in tree.groups or not (choice is None or isinstance(choice, str)):
                return None
            entries.append(("group", group, choice))
        else:
            return None
    if sum(kind == "self" for kind, _, _ in entries) != 1:
        return None
    groups = [name for kind, name, _ in entries if kind == "group"]
    if len(set(groups)) != len(groups) or any(g not in groups for g in external):
        return None

    choices = {name: choice for kind, name, choice in entries if kind == "group"}
    overridden = dict(external)  # Hydra: the command line first, then configs; the first setting wins
    visited = set()
    loaded = {}
    for kind, group, _ in reversed(entries):
        if kind != "group":
            continue
        visited.add(group)
        choice = overridden.get(group, choices[group])
        if choice is None:
            continue
        config = _load(os.path.join(tree.conf, group, f"{choice}.yaml"))
        if config is None or config[2] is None or not tree.option_exists(group, choice):
            return None
        header, body, defaults = config
        if "searchpath" in repr(body.get("hydra")):
            return None  # Hydra refuses it outside the primary config
        parent_package = "" if header == "_global_" else group
        for item in defaults:
            target = _config_override(item, parent_package, tree)
            if target is None:
                return None
            if target == "hydra":
                continue
            key, option = target
            if key not in choices or key in visited and key not in overridden:
                return None
            overridden.setdefault(key, option)
        loaded[group] = (parent_package, body)

    result = []
    for kind, name, _ in entries:
        if kind == "schema":
            result.append(("", OmegaConf.structured(ROOT_SCHEMAS[name])))
        elif kind == "self":
            result.append(("", OmegaConf.create(_without_hydra(primary_body))))
        elif name in loaded:
            package, body = loaded[name]
            result.append((package, OmegaConf.create(_without_hydra(body))))
    return result


def _config_override(item, parent_package: str, tree: _Tree):
    """(override key, option) of an `override /group[@package]: option` entry, "hydra" for one of Hydra's
    own groups (they only shape the `hydra` node), None for anything else."""
    if not isinstance(item, dict) or len(item) != 1:
        return None
    (spec, option), = item.items()
    m = _GROUP_OVERRIDE.match(str(spec))
    if m is None or not isinstance(option, str):
        return None
    group, package = m.group(1), m.group(2)
    if group.split("/")[0] == "hydra":
        return "hydra"
    if group not in tree.groups or not tree.option_exists(group, option):
        return None
    default_package = group.replace("/", ".")
    relative = default_package if package is None else package
    final = relative if not parent_package else f"{parent_package}.{relative}" if relative else parent_package
    cut = final.rfind("_global_")
    if cut != -1:
        final = final[cut + len("_global_") + 1:]
    return (group if final in (default_package, "") else f"{group}@{final}"), option


def _without_hydra(body: dict) -> dict:
    return {k: v for k, v in body.items() if k != "hydra"}

