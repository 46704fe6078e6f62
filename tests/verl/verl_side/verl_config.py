"""Compose verl's own trainer config (verl/trainer/config/<name>.yaml) with Hydra, as main_ppo does."""
from __future__ import annotations

import os
from typing import List

import verl
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra

CONFIG_DIR = os.path.join(os.path.dirname(verl.__file__), "trainer", "config")


def compose_verl(config_name: str, overrides: List[str]):
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=CONFIG_DIR, version_base=None):
            return compose(config_name=config_name, overrides=list(overrides))
    finally:
        GlobalHydra.instance().clear()
