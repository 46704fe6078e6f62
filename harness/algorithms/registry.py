"""Objective name -> implementation class, as named by its entry in `specs.SPECS` (the one registry)."""
from __future__ import annotations

import importlib

from harness.algorithms.specs import get_spec


def objective_class(name: str) -> type:
    """The class computing `name`; ValueError listing the known names otherwise."""
    module, _, cls = get_spec(name).implementation.partition(":")
    return getattr(importlib.import_module(module, package=__package__), cls)  # ".module": harness.algorithms'

