"""Results come back as return values (issue 37, "One pipeline"): each job's JobResult travels in its Hydra
JobReturn, a launcher returns them from `launch()`, a sweeper returns what its launches returned, and the command
line reads them from what the run or sweep returned. No module keeps a module-level list, dict or set that other
modules add to (the end-to-end flow: tests/e2e/test_sweep.py)."""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, List, Optional, Set, Tuple

from hydra.core.utils import JobReturn, JobStatus

import harness.launchers.results as results
from harness.launchers.job_returns import crashed_return, job_results
from harness.launchers.results import JobResult

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("harness", "hydra_plugins")
MUTATORS = {"append", "extend", "insert", "update", "setdefault", "add", "clear", "pop", "popitem", "remove",
            "discard"}
CONTAINER_CALLS = {"list", "dict", "set", "defaultdict", "OrderedDict", "deque", "Counter"}


def _modules(root: Path, packages=PACKAGES) -> Dict[str, ast.Module]:
    found = {}
    for package in packages:
        for path in (root / package).rglob("*.py"):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = ast.parse(path.read_text(encoding="utf-8"))
    return found


def _is_container(value: Optional[ast.expr]) -> bool:
    if isinstance(value, (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)):
        return True
    if isinstance(value, ast.Call):
        func = value.func
        return (func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)) in CONTAINER_CALLS
    return False


def _containers(tree: ast.Module) -> Set[str]:
    """Names a module binds at module level to a mutable container."""
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and _is_container(node.value):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


def _dotted(node: ast.expr) -> Optional[str]:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def shared_mutations(root: Path = REPO, packages=PACKAGES) -> List[str]:
    """`module:line` where a module changes a module-level container that another module defines."""
    modules = _modules(root, packages)
    containers = {name: _containers(tree) for name, tree in modules.items()}
    found = []
    for name, tree in modules.items():
        package = name if (root / Path(*name.split("."))).is_dir() else name.rpartition(".")[0]
        names: Dict[str, Tuple[str, str]] = {}
        aliases: Dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    local = alias.asname or alias.name.split(".")[0]
                    aliases[local] = alias.name if alias.asname else local
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join(parts + ([base] if base else []))
                for alias in node.names:
                    local = alias.asname or alias.name
                    if alias.name in containers.get(base, ()):
                        names[local] = (base, alias.name)
                    elif f"{base}.{alias.name}" in modules:
                        aliases[local] = f"{base}.{alias.name}"

        def shared(node: ast.expr) -> Optional[Tuple[str, str]]:
            if isinstance(node, ast.Name):
                return names.get(node.id)
            dotted = _dotted(node)
            if not dotted or "." not in dotted:
                return None
            head, _, rest = dotted.partition(".")
            module, _, attr = f"{aliases.get(head, head)}.{rest}".rpartition(".")
            return (module, attr) if attr in containers.get(module, ()) else None

        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATORS:
                hit = shared(node.func.value)
            elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
                targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
                hit = next((h for t in targets if isinstance(t, ast.Subscript) and (h := shared(t.value))), None)
            else:
                continue
            if hit and hit[0] != name:
                found.append(f"{name}:{node.lineno} changes {hit[0]}.{hit[1]}")
    return sorted(found)


def test_no_module_adds_to_another_modules_list_or_dict():
    assert shared_mutations() == []


def test_the_check_finds_a_shared_results_list(tmp_path):
    """The pattern issue 37 removed: a module-level list that other modules append to and clear."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "results.py").write_text("from typing import List\nRESULTS: List[int] = []\nNAMES = dict()\n")
    (package / "job.py").write_text("from pkg.results import RESULTS\n\n\ndef run():\n    RESULTS.append(1)\n")
    (package / "cli.py").write_text("from pkg import results\nimport pkg.results\n\n\ndef main():\n"
                                    "    results.RESULTS.clear()\n    pkg.results.NAMES['a'] = 1\n")
    (package / "own.py").write_text("CACHE = {}\n\n\ndef remember(key):\n    CACHE[key] = 1\n")
    assert shared_mutations(tmp_path, ("pkg",)) == [
        "pkg.cli:6 changes pkg.results.RESULTS", "pkg.cli:7 changes pkg.results.NAMES",
        "pkg.job:5 changes pkg.results.RESULTS"]


def test_no_results_list_and_nothing_imports_one():
    assert not hasattr(results, "RESULTS")
    imports = [f"{name}: {alias.name}" for name, tree in _modules(REPO, (*PACKAGES, "tests")).items()
               for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
               for alias in node.names if alias.name == "RESULTS"]
    assert imports == []


def test_what_a_launch_returned_gives_every_jobs_result_in_launch_order():
    """A sweeper's return value (Hydra's grid sweeper: one list per batch) read as the command line reads it."""
    finished = JobResult(name="algo=dppo", status="FINISHED", run_dir="/sweep/0")
    raised = JobReturn(overrides=["algo=drpo"], status=JobStatus.FAILED, _return_value=ValueError("no model"),
                       working_dir="/sweep/1")
    crashed = crashed_return(["launcher.workers=2"], 2, RuntimeError("killed"))
    returned = [[JobReturn(overrides=["algo=dppo"], status=JobStatus.COMPLETED, _return_value=finished), raised],
                [crashed]]
    assert job_results(returned)[0] is finished
    assert [(r.name, r.status, r.run_dir, r.error) for r in job_results(returned)[1:]] == [
        ("algo=drpo", "FAILED", "/sweep/1", "ValueError: no model"),
        ("#2", "FAILED", "?", "worker crashed: RuntimeError: killed")]
    assert job_results(None) == [] and job_results([]) == []
