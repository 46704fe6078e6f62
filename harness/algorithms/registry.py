"""Objective name -> implementation class.

Family modules register their classes with `@register("name", ...)`; one class may serve several names
(the four PPO-clipping objectives share one). Registering a name twice raises instead of overwriting.
"""
from __future__ import annotations

from typing import Callable, Dict, List

_REGISTRY: Dict[str, type] = {}


def register(*names: str) -> Callable[[type], type]:
    """Class decorator: register the class under every name in `names`."""

    def deco(cls: type) -> type:
        for name in names:
            if name in _REGISTRY:
                raise ValueError(f"objective {name!r} is already registered by {_REGISTRY[name].__name__}")
            _REGISTRY[name] = cls
        return cls

    return deco


def registered() -> List[str]:
    """Sorted names that have an implementation."""
    return sorted(_REGISTRY)


def objective_class(name: str) -> type:
    """The class registered under `name`; ValueError listing the known names otherwise."""
    if name not in _REGISTRY:
        raise ValueError(f"unknown objective {name!r}; known: {', '.join(registered())}")
    return _REGISTRY[name]
