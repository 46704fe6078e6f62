"""A disk cache of the CLI's composed run configs (before validation, which always runs).

A hit skips composing (a composition left to Hydra, which `fast_compose` declines, costs more than
importing Hydra), so a repeated `python -m harness --cfg job` runs without importing Hydra. An entry is
found only under a key made of everything the composition reads: the conf tree (every file's content),
the schema and composition code (fast_compose.py included), the Python version and sys.path, the
installed distributions (the *.dist-info / *.egg-info / *.pth names in site-packages, so any install,
upgrade or removal, Hydra plugins included), Hydra's, OmegaConf's and PyYAML's files (stat), the
`hydra_plugins` folders on sys.path, the environment variables the configs or overrides read with oc.env,
and the overrides. Not cached: a conf tree or overrides naming `hydra.searchpath` or interpolating inside
a list (defaults lists are resolved while composing), a composition that warns, and a result keeping a
resolver other than OmegaConf's own (such as `${now:...}`, which only Hydra registers).
HARNESS_CONFIG_CACHE: the cache folder (default $XDG_CACHE_HOME/harness/configs), or `off`."""
from __future__ import annotations

import hashlib
import os
import pickle
import re
import sys
from typing import Iterator, Optional, Sequence

from harness.disk_cache import cache_folder, read_entry, write_entry

FORMAT = 1  # bump when the entry format or the key's recipe changes
MAX_ENTRIES = 256
_OC_ENV = re.compile(r"oc\.env:\s*([^,}\s]+)")
_RESOLVER = re.compile(r"\$\{\s*([A-Za-z_][\w.]*)\s*:")
_LIST_INTERPOLATION = re.compile(r"^\s*-.*\$\{", re.M)
_TREE: list = []  # the conf tree's and installation's part of every key, read once per process


def cache_dir() -> Optional[str]:
    return cache_folder("HARNESS_CONFIG_CACHE", "configs")


def key(overrides: Sequence[str]) -> Optional[str]:
    """The entry name for these overrides in the present installation, or None: not cacheable."""
    if not _TREE:
        _TREE.append(_tree_key())
    joined = "\0".join(overrides)
    if _TREE[0] is None or cache_dir() is None or "searchpath" in joined:
        return None
    tree, conf_env = _TREE[0]
    env = sorted(conf_env | set(_OC_ENV.findall(joined)))
    digest = hashlib.blake2b(tree, digest_size=20)
    digest.update(repr((list(overrides), [(name, os.environ.get(name)) for name in env])).encode())
    return digest.hexdigest()


def _tree_key() -> Optional[tuple]:
    import harness.conf

    conf = os.path.dirname(harness.conf.__file__)
    if not os.path.isdir(conf):
        return None
    digest = hashlib.blake2b(repr((FORMAT, sys.version, sys.prefix, conf)).encode())
    texts = []
    for root, dirs, files in os.walk(conf):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            with open(os.path.join(root, name), "rb") as f:
                text = f.read()
            digest.update(f"\0{os.path.relpath(os.path.join(root, name), conf)}\0".encode() + text)
            texts.append(text.decode(errors="replace"))
    if any("searchpath" in t or _LIST_INTERPOLATION.search(t) for t in texts):
        return None  # another config folder, or a defaults list resolved while composing
    here = os.path.dirname(__file__)
    for name in ("schema.py", "compose.py", "compose_cache.py", "fast_compose.py"):
        with open(os.path.join(here, name), "rb") as f:
            digest.update(f.read())
    digest.update(repr(_installation()).encode())
    return digest.digest(), {n for t in texts for n in _OC_ENV.findall(t)}


def _installation() -> list:
    from importlib.util import find_spec

    seen: list = [sys.path]
    for entry in sys.path:
        if os.path.basename(entry) in ("site-packages", "dist-packages") and os.path.isdir(entry):
            seen.append(sorted(n for n in os.listdir(entry) if n.endswith((".dist-info", ".egg-info", ".pth"))))
    seen += [(path, _stat(path)) for path in hydra_plugin_files()]
    for package in ("hydra", "omegaconf", "yaml"):
        spec = find_spec(package)
        seen.append((package, spec and spec.origin, spec and spec.origin and _stat(spec.origin)))
    return seen


def hydra_plugin_files() -> Iterator[str]:
    """Every file under a `hydra_plugins` folder on sys.path (where Hydra discovers plugins), in order."""
    for entry in sys.path:
        for root, dirs, files in os.walk(os.path.join(entry or ".", "hydra_plugins")):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                yield os.path.join(root, name)


def _stat(path: str) -> tuple:
    st = os.stat(path)
    return st.st_size, st.st_mtime_ns


def load(name: str):
    """The cached config, or None (no entry, or one that cannot be read: it is then replaced)."""
    data = read_entry(cache_dir(), name + ".pkl")
    try:
        return None if data is None else pickle.loads(data)
    except Exception:
        return None


def store(name: str, cfg) -> None:
    data = pickle.dumps(cfg, protocol=pickle.HIGHEST_PROTOCOL)
    # the config's strings are in the pickle verbatim; a resolver found anywhere else only skips the entry
    if any(not r.startswith("oc.") for r in _RESOLVER.findall(data.decode("latin-1"))):
        return
    write_entry(cache_dir(), name + ".pkl", data, MAX_ENTRIES)
