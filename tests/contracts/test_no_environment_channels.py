"""No environment variable carries state between the harness's own layers (issue 37): harness code never sets a
HARNESS_* variable in its own environment (`os.environ[...] =`, `os.environ.setdefault`, `os.environ.update`,
`os.putenv`), where a later layer or a child process would read it. What the command line says reaches the
code that acts on it as arguments (harness.config.flags.Options, Hydra's `hydra.verbose`). The variables users
set (HARNESS_MAX_JOBS, HARNESS_OUTPUT_ROOT, ...) are only read; a child process's environment built as a dict
(`env={**os.environ, ...}`, a Slurm script's exports) is the child's, not this process's."""
from __future__ import annotations

import ast
import shutil
from pathlib import Path
from typing import Dict, List, Optional

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("harness", "hydra_plugins")
PREFIX = "HARNESS_"

# Writes whose key is no string constant, each with why it is no harness channel (a new one must be added here
# with its reason, so that a HARNESS_* name cannot hide behind a variable)
ALLOWED = {
    ("harness/tracking/outage.py", "name"): "MLflow's own client settings (MLFLOW_HTTP_REQUEST_*), for the library",
    ("harness/launchers/pool_worker.py", "environment or {}"): "a spawned worker's own CUDA_VISIBLE_DEVICES (its GPU), "
                                                              "set in that worker before torch is imported",
}


def _constants(root: Path) -> Dict[str, str]:
    """Module-level NAME = "string" assignments of every module (a key given by a constant's name)."""
    found = {}
    for package in PACKAGES:
        for path in (root / package).rglob("*.py"):
            for node in ast.parse(path.read_text(encoding="utf-8")).body:
                if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) \
                        and isinstance(node.value.value, str):
                    for target in node.targets:
                        if isinstance(target, ast.Name):
                            found[target.id] = node.value.value
    return found


def _is_environ(node: ast.AST) -> bool:
    """`os.environ` or a bare `environ`."""
    return (isinstance(node, ast.Attribute) and node.attr == "environ") or \
        (isinstance(node, ast.Name) and node.id == "environ")


def _keys(node: ast.AST) -> List[ast.AST]:
    """The keys an environment write sets: the subscript's, setdefault's/putenv's first argument, update's."""
    if isinstance(node, ast.Assign):
        return [t.slice for t in node.targets if isinstance(t, ast.Subscript) and _is_environ(t.value)]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        func = node.func
        if func.attr == "setdefault" and _is_environ(func.value) and node.args:
            return [node.args[0]]
        if func.attr == "putenv" and node.args:
            return [node.args[0]]
        if func.attr == "update" and _is_environ(func.value):
            given = [k for a in node.args if isinstance(a, ast.Dict) for k in a.keys if k is not None]
            return given + [ast.Constant(k.arg) for k in node.keywords if k.arg] + \
                [a for a in node.args if not isinstance(a, ast.Dict)]
    return []


def _name(key: ast.AST, constants: Dict[str, str]) -> Optional[str]:
    if isinstance(key, ast.Constant) and isinstance(key.value, str):
        return key.value
    if isinstance(key, ast.Name) and key.id in constants:
        return constants[key.id]
    if isinstance(key, ast.Attribute) and key.attr in constants:
        return constants[key.attr]
    return None


def environment_writes(root: Path = REPO) -> List[str]:
    """'file:line NAME' for each HARNESS_* variable harness code sets in its own environment, and for each write
    whose key is no constant and not in ALLOWED."""
    constants = _constants(root)
    found = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            rel = str(path.relative_to(root))
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                for key in _keys(node):
                    name = _name(key, constants)
                    if name is None and (rel, ast.unparse(key)) not in ALLOWED:
                        found.append(f"{rel}:{node.lineno} {ast.unparse(key)} (not a constant)")
                    elif name is not None and name.startswith(PREFIX):
                        found.append(f"{rel}:{node.lineno} {name}")
    return found


def test_no_harness_variable_is_set_in_the_harness_environment():
    assert environment_writes() == []


def test_every_allowed_write_is_still_there():
    """An allow-list entry whose write is gone is removed, so that the list says only what is true."""
    texts = {rel: (REPO / rel).read_text(encoding="utf-8") for rel, _ in ALLOWED}
    writes = ("os.environ.setdefault(", "os.environ[", "os.environ.update(")
    assert all(any(f"{write}{key}" in texts[rel] for write in writes)
               for rel, key in ALLOWED)


def test_the_check_finds_each_kind_of_write(tmp_path):
    """Planted in a copy of the package: each way of setting a variable is found, also through a constant."""
    for package in PACKAGES:
        shutil.copytree(REPO / package, tmp_path / package)
    target = tmp_path / "harness" / "cli.py"
    target.write_text(target.read_text(encoding="utf-8") + (
        "\n\nPLANTED_ENV = 'HARNESS_PLANTED'\n\n\ndef _planted():\n"
        "    os.environ['HARNESS_A'] = '1'\n    os.environ[PLANTED_ENV] = '1'\n"
        "    os.environ.setdefault('HARNESS_B', '1')\n    os.putenv('HARNESS_C', '1')\n"
        "    os.environ.update({'HARNESS_D': '1'})\n    os.environ.update(HARNESS_E='1')\n"
        "    env = {**os.environ, 'HARNESS_CHILD': '1'}  # a child's environment: allowed\n"
        "    os.environ['MLFLOW_X'] = '1'  # not a harness name\n"), encoding="utf-8")
    found = [line.split(" ", 1)[1] for line in environment_writes(tmp_path)]
    assert found == ["HARNESS_A", "HARNESS_PLANTED", "HARNESS_B", "HARNESS_C", "HARNESS_D", "HARNESS_E"]
