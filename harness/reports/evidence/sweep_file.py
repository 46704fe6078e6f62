"""Reading a named sweep file safely: which file a name means, and its content parsed and checked against a
typed schema (`SweepFile`, an OmegaConf structured config) before anything runs.

Every problem is a `SweepFileError`: one line naming the file, the line (when the YAML has one) and the key.
A sweep name is a plain name looked up only in the sweep folders; a path is taken only when it is written as
one (it ends in `.yaml`), and the caller says which file it read."""
from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import yaml
from omegaconf import MISSING, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from harness.config.hydra_values import override
from harness.reports.evidence.design import parse_design
from harness.reports.evidence.report_names import list_kinds

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
AXIS = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
# What a named sweep may not set: the sweep's own folder (`sweep` chooses it, a claim guards it).
RESERVED_KEYS = ("hydra.run.dir", "hydra.sweep.dir", "hydra.sweep.subdir")


class SweepFileError(ValueError):
    """A sweep file that cannot be run; the message is one line."""


@dataclass
class TestFile:
    name: Optional[str] = None
    measure: Optional[str] = None
    hypothesis: Optional[str] = None
    sesoi: Optional[float] = None
    contrast: Optional[Dict[str, float]] = None
    offset: Optional[float] = None
    method: Optional[str] = None
    note: Optional[str] = None
    check: Optional[bool] = None
    size: Optional[bool] = None


@dataclass
class SweepFile:
    """The keys a sweep file may hold and their types; what each means is in harness/reports/evidence/sweep_spec.py and
    design.py (which check the values' ranges)."""
    hypothesis: str = MISSING
    reports: List[str] = MISSING
    grids: List[Dict[str, Any]] = MISSING
    overrides: List[str] = field(default_factory=list)
    experiment_name: Optional[str] = None
    source: str = ""
    claim: str = ""
    # the design (design.py checks their values, naming the key): typed there, with its own messages
    alpha: Any = None
    power: Any = None
    last_k: Any = None
    sesoi: Any = None
    seeds: Any = None
    budget: Any = None
    tests: List[TestFile] = field(default_factory=list)
    preconditions: Any = None  # regime checks that gate the verdicts (harness/reports/evidence/preconditions.py)
    pilot: Any = None  # pilot seeds that size the design (harness/reports/evidence/pilot.py)
    underpowered: Any = None  # "accepted": run a design below its power target anyway
    first_seed: Any = None  # seeds: auto counts its seeds from here (a follow-up design on fresh seeds)
    sizing: Any = None  # how a design without a pilot was sized (e.g. from an earlier design's runs)
    earlier_designs: Any = None  # designs of the same claim tested before this one (α over serial redesigns)
    history: Any = None  # those designs, each {commit, showed} (design_gates.py)
    parts: Any = None  # all | any: how the tests combine into the verdict (harness/stats/combine.py)


def resolve_path(name: str, dirs: List[Path]) -> Tuple[Optional[Path], bool]:
    """(the file `name` means, whether it was given as a path). A name is looked up in `dirs` only; a path
    must end in .yaml. SweepFileError for anything else (`../x`, `a/b`)."""
    if name.endswith((".yaml", ".yml")):
        path = Path(name).expanduser()
        if not path.is_file():
            raise SweepFileError(f"sweep file {name} does not exist")
        return path.resolve(), True
    if not NAME.match(name):
        raise SweepFileError(f"sweep name {name!r} is not allowed: a name from the sweep folders (letters, digits, "
                             "_ . -), or the path of a sweep file ending in .yaml")
    return next((d / f"{name}.yaml" for d in dirs if (d / f"{name}.yaml").is_file()), None), False


class _Reader:
    """One sweep file: its text parsed once, with the line of every key kept for the messages."""

    def __init__(self, path: Path, name: str):
        self.path, self.name = path, name
        try:
            text = path.read_text()
        except (OSError, UnicodeDecodeError) as err:
            raise self.error("", f"cannot be read ({err})") from None
        try:
            self.root = yaml.compose(text, Loader=yaml.SafeLoader)
            self._refuse_duplicate_keys(self.root, "")
            data = yaml.safe_load(text)
        except yaml.YAMLError as err:
            mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
            where = f" line {mark.line + 1}" if mark is not None else ""
            problem = " ".join(str(getattr(err, "problem", None) or err).split())
            raise SweepFileError(f"sweep {name!r} ({path}{where}): not valid YAML ({problem})") from None
        if data is None:
            data = {}
        if not isinstance(data, dict):
            raise self.error("", f"must be a mapping of keys (hypothesis, reports, grids, ...), not "
                                 f"{type(data).__name__}")
        self.data = data

    def _refuse_duplicate_keys(self, node: Any, path: str) -> None:
        if isinstance(node, yaml.MappingNode):
            seen = set()
            for key, value in node.value:
                name = f"{path}.{key.value}" if path else str(key.value)
                if key.value in seen:
                    raise SweepFileError(f"sweep {self.name!r} ({self.path} line {key.start_mark.line + 1}): key "
                                         f"{name!r} is given twice")
                seen.add(key.value)
                self._refuse_duplicate_keys(value, name)
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                self._refuse_duplicate_keys(item, f"{path}[{index}]")

    def line(self, key: str) -> Optional[int]:
        """The line of `key` (OmegaConf's full key: `grids[0].algo`), or of the closest enclosing key."""
        node, rest, line = self.root, key, None
        while rest and node is not None:
            index = re.match(r"^\[(\d+)\]\.?", rest)
            if isinstance(node, yaml.SequenceNode) and index:
                position = int(index.group(1))
                if position >= len(node.value):
                    break
                node, rest = node.value[position], rest[index.end():]
                line = node.start_mark.line + 1
                continue
            if not isinstance(node, yaml.MappingNode):
                break
            matches = [(k, v) for k, v in node.value if isinstance(k.value, str) and rest.startswith(k.value)
                       and rest[len(k.value):][:1] in ("", ".", "[")]
            if not matches:
                break
            name, value = max(matches, key=lambda kv: len(kv[0].value))
            line, node = name.start_mark.line + 1, value
            rest = rest[len(name.value):].lstrip(".")
        return line if line is not None else (self.root.start_mark.line + 1 if self.root is not None else None)

    def error(self, key: str, why: str) -> SweepFileError:
        line = self.line(key) if key and getattr(self, "root", None) is not None else None
        where = f" line {line}" if line else ""
        subject = f" key {key!r}" if key else ""
        return SweepFileError(f"sweep {self.name!r} ({self.path}{where}):{subject} {why}")

    def design_error(self, err: Exception) -> SweepFileError:
        """A design rule's message (design.py: "sweep 'x': 'budget.runs' is ..."), with the file and line."""
        text = str(err).splitlines()[0] if str(err).strip() else type(err).__name__
        text = text.removeprefix(f"sweep {self.name!r}: ")
        quoted = re.search(r"'([A-Za-z_][\w.]*(?:\[\d+\])?[\w.]*)'|^(tests\[\d+\][\w.]*)", text)
        key = next((g for g in quoted.groups() if g), "") if quoted else ""
        line = self.line(key.partition(":")[0]) if key else None
        return SweepFileError(f"sweep {self.name!r} ({self.path}{f' line {line}' if line else ''}): {text}")


def read_sweep_file(path: Path, name: str) -> Dict[str, Any]:
    """The file's content, checked against `SweepFile` and the value rules below; SweepFileError otherwise."""
    reader = _Reader(path, name)
    data = reader.data
    _check_types(reader, data)
    for key in ("hypothesis", "reports", "grids"):
        if data.get(key) in (None, "", [], {}):
            raise reader.error(key, "is missing or empty")
    _check_reports(reader, data["reports"])
    _check_grids(reader, data["grids"])
    _check_overrides(reader, data.get("overrides") or [])
    name = data.get("experiment_name")
    if name is not None and not str(name).strip():
        raise reader.error("experiment_name", "is empty; give a name, or leave it out (the sweep's name)")
    texts = {k: str(data[k]) for k in ("hypothesis", "source", "claim", "experiment_name") if data.get(k) is not None}
    clean = {**data, **texts, "reports": [str(r) for r in data["reports"]]}
    try:
        clean["design"] = parse_design(name, clean)  # pops the design's keys
    except (TypeError, ValueError) as err:
        raise reader.design_error(err) from None
    return clean


def _type_problem(err: OmegaConfBaseException) -> str:
    """OmegaConf's first line, in the file's words (a list, a mapping, a text) rather than its node names."""
    text = " ".join(str(getattr(err, "msg", "") or err).split("\n")[0].split())
    conversion = re.search(r"could not be converted to (\w+)", text)
    if conversion:
        return f"must be {'an' if conversion.group(1)[0] in 'AEIOU' else 'a'} {conversion.group(1).lower()}"
    for marker, plain in (("is not a ListConfig", "must be a list ([a, b, ...])"),
                          ("with ListConfig", "must be a list ([a, b, ...])"),
                          ("to Dict[", "must be a mapping (key: value)"),
                          ("Cannot convert 'ListConfig' to string", "must be a text, not a list"),
                          ("Cannot convert 'DictConfig' to string", "must be a text, not a mapping"),
                          ("not in '", "is not allowed")):
        if marker in text:
            return plain
    return text


def _check_types(reader: _Reader, data: Dict[str, Any]) -> None:
    """Each key against `SweepFile` (unknown keys, wrong types), and each element of its typed lists, so the
    message names the element (`tests[1].sesoi`)."""
    allowed = [f.name for f in fields(SweepFile)]
    base = OmegaConf.structured(SweepFile)
    for key, value in data.items():
        if key not in allowed:
            raise reader.error(str(key), f"is not allowed; allowed: {', '.join(allowed)}")
        element = {"tests": TestFile, "grids": Dict[str, Any]}.get(key)
        if element is not None and isinstance(value, list):
            for index, item in enumerate(value):
                if not isinstance(item, dict):
                    raise reader.error(f"{key}[{index}]", f"is {item!r}; must be a mapping (key: value)")
                if element is TestFile:
                    try:
                        OmegaConf.merge(OmegaConf.structured(TestFile), item)
                    except OmegaConfBaseException as err:
                        inner = str(getattr(err, "full_key", "") or "")
                        where = f"{key}[{index}]" + (f".{inner}" if inner else "")
                        found = OmegaConf.select(OmegaConf.create(item), inner, default=None) if inner else None
                        shown = f"is {found!r}; " if found is not None else ""
                        raise reader.error(where, shown + _type_problem(err)) from None
        if key in ("reports", "overrides") and isinstance(value, list):
            for index, item in enumerate(value):
                if not isinstance(item, str):
                    raise reader.error(f"{key}[{index}]", f"is {item!r}; must be a text")
        try:
            OmegaConf.merge(base, {key: value})
        except OmegaConfBaseException as err:
            raise reader.error(str(key), f"is {value!r}; {_type_problem(err)}") from None


def _check_reports(reader: _Reader, reports: List[str]) -> None:
    for index, kind in enumerate(reports):
        if kind not in list_kinds():
            raise reader.error(f"reports[{index}]", f"{kind!r} is not a report kind; known: {', '.join(list_kinds())}")


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def _check_grids(reader: _Reader, grids: List[Dict[str, Any]]) -> None:
    for index, grid in enumerate(grids):
        if not grid:
            raise reader.error(f"grids[{index}]", "is empty; give at least one axis (key: [values])")
        for axis, values in grid.items():
            where = f"grids[{index}].{axis}"
            if not isinstance(axis, str) or not AXIS.match(axis) or axis in RESERVED_KEYS:
                raise reader.error(where, "is not allowed as a grid axis: a config key (trainer.lr, algo, ...); "
                                          "the sweep's folder is chosen by `sweep`")
            if isinstance(values, list):
                if not values:
                    raise reader.error(where, "is empty; give at least one value")
                bad = next((v for v in values if not _is_scalar(v)), None)
                if bad is not None:
                    raise reader.error(where, f"holds {bad!r}; allowed: a list of plain values (numbers, names)")
            elif not _is_scalar(values):
                raise reader.error(where, f"is {values!r}; allowed: a plain value or a list of them")
            for value in values if isinstance(values, list) else [values]:
                try:
                    override(axis, value)
                except ValueError as err:
                    raise reader.error(where, str(err)) from None


def _check_overrides(reader: _Reader, overrides: List[str]) -> None:
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import OverrideParseException

    parser = OverridesParser.create()
    for index, item in enumerate(overrides):
        where = f"overrides[{index}]"
        try:
            parsed, = parser.parse_overrides([str(item)])
        except OverrideParseException as err:  # several lines
            raise reader.error(where, f"{item!r} is not a Hydra override ({str(err).splitlines()[0]})") from None
        if parsed.is_sweep_override():
            raise reader.error(where, f"{item!r} sweeps several values; put sweep axes in a grid")
        if parsed.get_key_element().lstrip("+~") in RESERVED_KEYS:
            raise reader.error(where, f"{item!r} is not allowed: the sweep's folder is chosen by `sweep`")
