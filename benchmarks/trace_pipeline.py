"""How many of the project's files a parameter passes through from argv to the loss (issue 37).

`python benchmarks/trace_pipeline.py [multirun] delta=0.37 algo=dppo debug=quick trainer.steps=1` runs the
command in this process (`harness.cli.run_cli`) under a profiler and records each call into a file of
`harness/` or `hydra_plugins/` whose arguments carry the value 0.37: any string containing `delta=0.37` (argv,
overrides, and the labels made of them: a run's name, its description, its folder record), the float, a config
with `delta` / `algo.delta` / `algo.params.delta` at 0.37, or a list, dict or object holding one of those (two
levels deep) - until the first call of the loss, `harness/algorithms/base.py: compute` (one run's objective) or
`compute_rows` (the trainer's: the objectives of an ensemble grouped by kind). It prints JSON: `files` (how many
distinct files, in `order` of their first call), and `returns` (how often the chain comes back to a file it had
left); `parameter_files`/`parameter_order`: the same count where a string carries the value only when it is the
override itself (`delta=0.37`, `algo.delta=0.37`, ...), not a label made from it; and `stack_files`/`stack`:
the project files on the call stack at the loss (the chain itself, without the side calls that record or check
the value on the way). Run it in an empty folder with HARNESS_OUTPUT_ROOT and
MLFLOW_TRACKING_URI pointing there: the run (or sweep) really runs. tests/contracts/test_pipeline_length.py
keeps a single run's count under its ceiling."""
from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any, List

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("harness", "hydra_plugins")
VALUE = 0.37
LOSS = {("harness/algorithms/base.py", "compute"), ("harness/algorithms/base.py", "compute_rows")}


OVERRIDE = re.compile(r"[+~]*(algo\.)?(params\.)?delta=" + re.escape(str(VALUE)))


def carries(value: Any, depth: int = 0, labels: bool = True) -> bool:
    """Whether an argument holds the traced value (see the module's docstring); `labels`: a string containing
    the override counts, not only the override itself."""
    from omegaconf import DictConfig, OmegaConf

    try:
        if isinstance(value, str):
            return f"delta={VALUE}" in value if labels else OVERRIDE.fullmatch(value.strip()) is not None
        if isinstance(value, float):
            return value == VALUE
        if isinstance(value, DictConfig):
            return any(OmegaConf.select(value, key, default=None) == VALUE
                       for key in ("delta", "algo.delta", "algo.params.delta"))
        if depth < 2 and isinstance(value, (list, tuple)):
            return any(carries(item, depth + 1, labels) for item in list(value)[:64])
        if depth < 2 and isinstance(value, dict):
            return any(carries(item, depth + 1, labels) for item in list(value.values())[:64])
        if depth < 1 and hasattr(value, "__dict__") and not isinstance(value, type):
            return any(carries(item, depth + 1, labels) for item in list(vars(value).values())[:64])
    except Exception:  # an object that cannot be looked into carries nothing we can see
        return False
    return False


def trace(argv: List[str]) -> dict:
    """Run the command and return {"files", "returns", "order"}."""
    from harness.cli import run_cli

    root = str(REPO) + os.sep
    chain: List[str] = []
    parameter_chain: List[str] = []
    done: List[bool] = []
    stack: List[str] = []  # the project files on the call stack when the loss is first computed

    def profile(frame, event, _arg) -> None:
        if event != "call" or done:
            return
        path = frame.f_code.co_filename
        if not path.startswith(root) or os.sep + "tests" + os.sep in path:
            return
        rel = os.path.relpath(path, root)
        if not rel.startswith(PACKAGES):
            return
        if (rel, frame.f_code.co_name) in LOSS:
            chain.append(rel)
            parameter_chain.append(rel)
            done.append(True)
            caller = frame
            while caller is not None:
                name = os.path.relpath(caller.f_code.co_filename, root)
                if caller.f_code.co_filename.startswith(root) and name.startswith(PACKAGES) and name not in stack:
                    stack.insert(0, name)
                caller = caller.f_back
            return
        code = frame.f_code
        names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
        values = [frame.f_locals.get(name) for name in names]
        if any(carries(value) for value in values) and (not chain or chain[-1] != rel):
            chain.append(rel)
        if any(carries(v, labels=False) for v in values) and (not parameter_chain or parameter_chain[-1] != rel):
            parameter_chain.append(rel)

    sys.setprofile(profile)
    try:
        run_cli(list(argv))
    except BaseException:  # the chain up to where it stopped is what is counted
        pass
    finally:
        sys.setprofile(None)
    files, returns = _visits(chain)
    parameter_files, parameter_returns = _visits(parameter_chain)
    return {"files": len(files), "returns": returns, "order": files,
            "parameter_files": len(parameter_files), "parameter_returns": parameter_returns,
            "parameter_order": parameter_files, "reached_loss": bool(done), "stack_files": len(stack), "stack": stack}


def _visits(chain: List[str]) -> tuple:
    """The distinct files of a chain in order of first visit, and how often it returned to one it had left
    (consecutive calls into one file are one visit: a chain holds no repeats in a row)."""
    files, returns, seen = [], 0, set()
    for rel in chain:
        if rel in seen:
            returns += 1
        else:
            files.append(rel)
        seen.add(rel)
    return files, returns


if __name__ == "__main__":
    print(json.dumps(trace(sys.argv[1:]), indent=1))
