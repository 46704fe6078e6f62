"""Reading runs and deciding return data; only rendering writes files (harness/reports/__init__.py, issue 37): no
module of harness/reports/results or harness/reports/evidence writes, moves or deletes a file or folder. Read
from the source (every call of a writing API of pathlib, open, os, shutil, json/yaml/pickle, numpy, torch,
matplotlib, pandas and the harness's own atomic writes); a planted write in a copy of the package shows the
check finds each kind."""
from __future__ import annotations

import ast
from pathlib import Path
from typing import List

from test_layers import REPO, planted

ROOMS = ("reports/results", "reports/evidence")
# a module whose job is writing, with why
WRITERS = {"reports/results/synthetic.py": "makes a synthetic sweep in an MLflow store for tests and demos"}
WRITING_METHODS = {"write_text", "write_bytes", "mkdir", "touch", "unlink", "rmdir", "rename", "symlink_to",
                   "hardlink_to", "savefig", "to_csv", "to_parquet", "to_pickle", "write_text_atomically",
                   "write_atomically"}
WRITING_MODULE_CALLS = {"os": {"makedirs", "mkdir", "remove", "unlink", "rename", "replace", "rmdir", "symlink",
                               "link", "truncate"},
                        "shutil": {"copy", "copy2", "copyfile", "copytree", "move", "rmtree"},
                        "json": {"dump"}, "yaml": {"dump", "safe_dump", "dump_all", "safe_dump_all"},
                        "pickle": {"dump"}, "torch": {"save"}, "np": {"save", "savez", "savetxt"},
                        "numpy": {"save", "savez", "savetxt"}}
STRING_RESULTS = {"yaml": {"dump", "safe_dump"}}  # these return a string when given no stream


def _writes_with_mode(call: ast.Call) -> bool:
    """open(path, "w") / path.open("a"): a mode that writes, appends, creates or updates."""
    mode = call.args[1] if isinstance(call.func, ast.Name) and len(call.args) > 1 else (
        call.args[0] if isinstance(call.func, ast.Attribute) and call.args else None)
    mode = next((k.value for k in call.keywords if k.arg == "mode"), mode)
    return isinstance(mode, ast.Constant) and isinstance(mode.value, str) and bool(set(mode.value) & set("wax+"))


def _is_write(call: ast.Call) -> bool:
    func = call.func
    if isinstance(func, ast.Name):
        atomic = func.id in {"write_text_atomically", "write_atomically"}
        return atomic or (func.id == "open" and _writes_with_mode(call))
    if not isinstance(func, ast.Attribute):
        return False
    owner = func.value.id if isinstance(func.value, ast.Name) else None
    if owner in WRITING_MODULE_CALLS:
        if func.attr not in WRITING_MODULE_CALLS[owner]:
            return False
        streamless = len(call.args) < 2 and not any(k.arg == "stream" for k in call.keywords)
        return not (func.attr in STRING_RESULTS.get(owner, ()) and streamless)
    if func.attr == "open":
        return _writes_with_mode(call)
    return func.attr in WRITING_METHODS


def writes(root: Path = REPO) -> List[str]:
    """'file:line call' for each call that writes a file in the rooms that must not."""
    found = []
    for room in ROOMS:
        for path in sorted((root / "harness" / room).rglob("*.py")):
            if str(path.relative_to(root / "harness")) in WRITERS:
                continue
            calls = [node for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                     if isinstance(node, ast.Call) and _is_write(node)]
            found += [f"{path.relative_to(root)}:{call.lineno} {ast.unparse(call.func)}"
                      for call in sorted(calls, key=lambda c: (c.lineno, c.col_offset))]
    return found


def test_results_and_evidence_write_no_file():
    assert writes() == []


def test_a_planted_write_is_found(tmp_path):
    """Each way of writing, planted in a copy of evidence/pilot.py, is found; reading and strings are not."""
    copy = planted(tmp_path, "reports/evidence/pilot.py", (
        "\n\ndef _plant(folder):\n"
        "    (folder / 'a.yaml').write_text(yaml.safe_dump({}))\n"
        "    folder.mkdir(parents=True)\n"
        "    with open(folder / 'b.txt', 'a') as f:\n        f.write('x')\n"
        "    with (folder / 'c.txt').open(mode='w') as f:\n        yaml.safe_dump({}, f)\n"
        "    os.replace(folder / 'b.txt', folder / 'c.txt')\n"
        "    shutil.rmtree(folder)\n"
        "    return open(folder / 'd.txt').read(), folder.open('rb'), yaml.safe_dump({}), 'a-b'.replace('-', '')\n"))
    found = [line.split(" ", 1)[1] for line in writes(copy)]
    assert found == ["(folder / 'a.yaml').write_text", "folder.mkdir", "open", "(folder / 'c.txt').open",
                     "yaml.safe_dump", "os.replace", "shutil.rmtree"], found
