"""Hydra's own command-line parser, so the harness reads `-m`, `--cfg`, `--info` and overrides exactly as Hydra
does (Hydra exposes its parser only from an internal module)."""
from __future__ import annotations

import argparse
from typing import List


def parse_hydra_args(argv: List[str]) -> argparse.Namespace:
    from hydra._internal.utils import get_args_parser  # loaded with the command line, not on every plugin scan

    return get_args_parser().parse_args(argv)
