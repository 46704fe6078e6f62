"""`python -m harness`: the command line (harness/cli.py), or one line saying what to install where the
interpreter lacks the harness's dependencies (a `python` outside the venv the README's set-up made)."""
import sys

REQUIRED = ("hydra", "omegaconf")  # what every command but `help` needs first; the rest comes with them


def missing_dependency():
    """The first required top-level module this interpreter cannot import, or None."""
    from importlib.util import find_spec

    return next((name for name in REQUIRED if find_spec(name) is None), None)


if __name__ == "__main__":
    missing = missing_dependency()
    if missing:
        sys.stderr.write(f"harness: error: this Python ({sys.executable}) lacks the harness's dependencies (no module "
                         f"'{missing}'): activate the venv (`. .venv/bin/activate`) or install them "
                         "(`python3 -m venv .venv && .venv/bin/pip install -e .`)\n")
        sys.exit(2)
    from harness.cli import main

    main()
