"""The package's layers (README "Architecture"): import-linter's layers contract in pyproject.toml, checked on
every import statement (grimp reads those inside functions too), and imports of project modules inside
functions kept for start-up time or an optional dependency only."""
from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("harness", "hydra_plugins")
MAX_IMPORTS_IN_FUNCTIONS = 40


def in_function_imports(root: Path = REPO) -> dict:
    """file -> line numbers of the imports of project modules that sit inside a function."""
    found = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            lines = set()
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                for sub in ast.walk(node):
                    if isinstance(sub, ast.ImportFrom) and (sub.level or (sub.module or "").split(".")[0] in PACKAGES):
                        lines.add(sub.lineno)
                    elif isinstance(sub, ast.Import) and any(a.name.split(".")[0] in PACKAGES for a in sub.names):
                        lines.add(sub.lineno)
            if lines:
                found[str(path.relative_to(root))] = sorted(lines)
    return found


MODULE_NAME = re.compile(r"harness(\.\w+)+(:\w+)?")  # a module, or `module:attribute` as Hydra's _target_


def layer_orders(root: Path = REPO) -> dict:
    """container -> {layer name: its height (0: the top)}, from every layers contract in pyproject.toml (the
    package's layers, and the rooms of harness.reports)."""
    contracts = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    return {container: {name.strip(): len(c["layers"]) - height
                        for height, layer in enumerate(c["layers"]) for name in layer.split(":")}
            for c in contracts if c["type"] == "layers" for container in c["containers"]}


def _heights(orders: dict, module: str, other: str):
    """(module's height, other's height) in the innermost contract whose container holds both in different
    layers; None where none does."""
    for container in sorted(orders, key=len, reverse=True):
        prefix = container + "."
        if module.startswith(prefix) and other.startswith(prefix):
            mine, theirs = module[len(prefix):].split(".")[0], other[len(prefix):].split(".")[0]
            if mine != theirs and mine in orders[container] and theirs in orders[container]:
                return orders[container][mine], orders[container][theirs]
    return None


def _named_modules(tree: ast.AST) -> list:
    """(line, module) of each string in `tree` that names a harness module (docstrings aside), and of each
    f-string whose fixed start names a package (`f"harness.reports.rendering.kinds.{name}"`)."""
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr)}
    found = []
    for node in ast.walk(tree):
        text = None
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            text = node.value if MODULE_NAME.fullmatch(node.value) else None
        elif isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
            head = str(node.values[0].value)
            text = head.rstrip(".") if head.startswith("harness.") and head.endswith(".") else None
        if text:
            found.append((node.lineno, text.partition(":")[0]))
    return found


def reaches_up_by_name(root: Path = REPO) -> list:
    """'file:line -> module' for each module named by a string (importlib, a registry of `module:function`)
    in a layer below the module's: the layers contract reads import statements only."""
    orders = layer_orders(root)
    found = []
    for path in sorted((root / "harness").rglob("*.py")):
        mine = ".".join(path.relative_to(root).with_suffix("").parts)
        for line, module in sorted(_named_modules(ast.parse(path.read_text(encoding="utf-8")))):
            target = root.joinpath(*module.split("."))
            if not (target.with_suffix(".py").is_file() or (target / "__init__.py").is_file()):
                continue  # not a module (a tag such as harness.config_hash)
            heights = _heights(orders, mine, module)
            if heights is not None and heights[1] > heights[0]:
                found.append(f"{path.relative_to(root)}:{line} -> {module}")
    return found


def test_no_layer_reaches_up_by_a_module_name():
    """importlib and registries of import paths are imports the contract cannot see: none points up (a
    trainer's own checks are registered by the trainers and handed to validation, harness/trainers/__init__.py)."""
    assert reaches_up_by_name() == []


def planted(tmp_path: Path, module: str, addition: str) -> Path:
    """A copy of the package and its contracts with `addition` appended to `module` (a path under harness/)."""
    copy = tmp_path / "repo"
    shutil.copytree(REPO / "harness", copy / "harness")
    shutil.copy(REPO / "pyproject.toml", copy / "pyproject.toml")
    culprit = copy / "harness" / module
    culprit.write_text(culprit.read_text() + addition)
    return copy


def test_a_module_named_up_a_layer_is_found(tmp_path):
    """The check finds a lower layer that names a higher one's module for importlib (checked on a copy)."""
    copy = planted(tmp_path, "config/validate.py",
                   '\nTRAINER_CHECKS = {"verl": "harness.trainers.verl.validate:validate_verl"}\n'
                   'KINDS = f"harness.reports.rendering.kinds.{1}"\n')
    found = reaches_up_by_name(copy)
    assert [f.split(" -> ")[1] for f in found] == ["harness.trainers.verl.validate",
                                                   "harness.reports.rendering.kinds"], found


DYNAMIC_IMPORTS = {"import_module", "__import__", "find_spec"}  # importlib's, the builtin, importlib.util's


def _static_text(node: ast.AST) -> str:
    """What a module-name argument holds as far as it is fixed in the source: a constant, an f-string's or a
    concatenation's fixed start; '' when nothing is fixed."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
        return str(node.values[0].value)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _static_text(node.left)
    return ""


def _dynamic_targets(tree: ast.AST, package: str) -> list:
    """(line, module) of each importlib.import_module / __import__ / importlib.util.find_spec call whose target
    names a harness module: absolute, or relative to its `package` argument (`__package__`: this file's)."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if name not in DYNAMIC_IMPORTS:
            continue
        target = _static_text(node.args[0])
        anchor = next((kw.value for kw in node.keywords if kw.arg == "package"),
                      node.args[1] if name != "__import__" and len(node.args) > 1 else None)
        if target.startswith(".") and anchor is not None:
            base = package if isinstance(anchor, ast.Name) and anchor.id == "__package__" else _static_text(anchor)
            dots = len(target) - len(target.lstrip("."))
            parts = base.split(".")[:len(base.split(".")) - dots + 1] if base else []
            target = ".".join([*parts, target.lstrip(".")]) if parts else ""
        module = target.rstrip(".").partition(":")[0]
        if module.split(".")[0] == "harness" and "." in module:
            found.append((node.lineno, module))
    return found


def dynamic_imports_across_layers(root: Path = REPO) -> list:
    """'file:line -> module' for each dynamic import (importlib.import_module, __import__, find_spec) whose
    target, as fixed in the source, is a harness module of another layer: the layers contract sees import
    statements only, so a dynamic import stays inside its own layer (a registry hands a higher one's in)."""
    orders = layer_orders(root)
    found = []
    for path in sorted((root / "harness").rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        package = ".".join(parts[:-1])  # __package__, of a module and of a package's __init__ alike
        for line, module in _dynamic_targets(ast.parse(path.read_text(encoding="utf-8")), package):
            if _heights(orders, ".".join(parts), module) is not None:  # another layer, or another room
                found.append(f"{path.relative_to(root)}:{line} -> {module}")
    return found


def test_no_dynamic_import_reaches_across_layers():
    assert dynamic_imports_across_layers() == []


def test_a_dynamic_import_across_layers_is_found(tmp_path):
    """Planted on a copy: absolute, relative to __package__, concatenated, f-string and find_spec targets."""
    copy = planted(tmp_path, "config/validate.py", "\n\ndef _reach(name):\n"
                   "    importlib.import_module('harness.trainers.verl.validate')\n"
                   "    importlib.import_module('..reports.registry', package=__package__)\n"
                   "    __import__('harness.sweeps.' + name)\n"
                   "    importlib.util.find_spec(f'harness.launchers.{name}')\n"
                   "    importlib.import_module('.names', __package__)  # its own layer: allowed\n"
                   "    importlib.import_module(name)  # nothing fixed: the string check covers registries\n")
    found = [f.split(" -> ")[1] for f in dynamic_imports_across_layers(copy)]
    assert found == ["harness.trainers.verl.validate", "harness.reports.registry", "harness.sweeps",
                     "harness.launchers"], found


def test_the_layers_contract_holds():
    """`lint-imports` (import-linter) reads the contracts from pyproject.toml; it fails on any import that
    points up a layer, or on a package folder the contract does not name."""
    lint = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    if lint is None:
        pytest.fail("import-linter is not installed: pip install -e '.[test]'")
    proc = subprocess.run([lint, "--no-cache"], cwd=REPO, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "0 broken" in proc.stdout and "kept" in proc.stdout, proc.stdout[-2000:]


def test_the_contract_sees_imports_inside_functions(tmp_path):
    """A lower layer importing a higher one inside a function breaks the contract (checked on a copy)."""
    lint = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    copy = tmp_path / "repo"
    for name in (*PACKAGES, "pyproject.toml"):
        source = REPO / name
        (shutil.copytree if source.is_dir() else shutil.copy)(source, copy / name)
    culprit = copy / "harness" / "config" / "names.py"
    culprit.write_text(culprit.read_text() + "\n\ndef _reach_up():\n    from harness.reports.rendering import registry\n"
                       "    return registry\n")
    proc = subprocess.run([lint, "--no-cache"], cwd=copy, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(copy)})
    assert proc.returncode != 0 and "harness.config.names -> harness.reports.rendering.registry" in proc.stdout, \
        proc.stdout[-3000:]


def test_few_imports_hide_inside_functions():
    found = in_function_imports()
    total = sum(map(len, found.values()))
    listing = "\n".join(f"{n:3d} {path}" for path, n in sorted(((p, len(v)) for p, v in found.items()),
                                                               key=lambda item: -item[1]))
    assert total <= MAX_IMPORTS_IN_FUNCTIONS, f"{total} imports of project modules inside functions:\n{listing}"


def test_the_report_rooms_keep_their_order(tmp_path):
    """harness.reports is three rooms, rendering > evidence > results: deciding code that reaches for the page
    code, or reading code that reaches for the deciding code, breaks the reports contract (checked on a copy)."""
    lint = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    copy = tmp_path / "repo"
    for name in (*PACKAGES, "pyproject.toml"):
        source = REPO / name
        (shutil.copytree if source.is_dir() else shutil.copy)(source, copy / name)
    plants = {"evidence/decisions.py": "from harness.reports.rendering import page",
              "results/summary.py": "from harness.reports.evidence import outcomes"}
    for file, line in plants.items():
        culprit = copy / "harness" / "reports" / file
        culprit.write_text(culprit.read_text() + f"\n\ndef _reach_up():\n    {line}\n")
    proc = subprocess.run([lint, "--no-cache"], cwd=copy, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(copy)})
    out = proc.stdout
    assert proc.returncode != 0 and "Layers: an import never points up KEPT" in out, out[-3000:]
    assert "harness.reports.evidence.decisions -> harness.reports.rendering.page" in out, out[-3000:]
    assert "harness.reports.results.summary -> harness.reports.evidence.outcomes" in out, out[-3000:]


def test_a_room_named_up_is_found(tmp_path):
    """A module of a lower room of harness.reports naming a higher room's module in a string (for importlib)
    is found like one naming a higher layer's (checked on a copy)."""
    copy = planted(tmp_path, "reports/evidence/sweep_file.py",
                   '\nKIND = f"harness.reports.rendering.kinds.{1}"\n'
                   'PAGE = "harness.reports.rendering.page:Page"\nRUNS = "harness.reports.results.data"\n')
    found = reaches_up_by_name(copy)
    assert [f.split(" -> ")[1] for f in found] == ["harness.reports.rendering.kinds",
                                                   "harness.reports.rendering.page"], found
