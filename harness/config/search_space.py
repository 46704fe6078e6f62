"""Optuna search spaces written in config: `float(lo, hi)`, `float(lo, hi, log)`, `int(lo, hi)`,
`int(lo, hi, log)`, `choice(a, b, ...)`. Parsing never imports optuna; `distribution()` does."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Dict, List, Tuple

_SPEC = re.compile(r"^\s*(float|int|choice)\s*\((.*)\)\s*$")


@dataclass(frozen=True)
class Dimension:
    kind: str  # float | int | choice
    low: Any = None
    high: Any = None
    log: bool = False
    choices: Tuple[Any, ...] = ()

    def sample_values(self) -> List[Any]:
        """Values that span the dimension, for validating configs before a study starts."""
        return list(self.choices) if self.kind == "choice" else [self.low, self.high]

    def text(self) -> str:
        """The dimension as written in config, normalized: `float(0.05, 20.0, log)`, `choice(a, b)`."""
        if self.kind == "choice":
            return f"choice({', '.join(map(str, self.choices))})"
        return f"{self.kind}({self.low}, {self.high}{', log' if self.log else ''})"

    def distribution(self):
        import optuna.distributions as d

        if self.kind == "float":
            return d.FloatDistribution(self.low, self.high, log=self.log)
        if self.kind == "int":
            return d.IntDistribution(self.low, self.high, log=self.log)
        return d.CategoricalDistribution(list(self.choices))


def _literal(text: str) -> Any:
    text = text.strip()
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return {"true": True, "false": False, "null": None}.get(text.lower(), text)


def parse_dimension(key: str, spec: str) -> Dimension:
    match = _SPEC.match(str(spec))
    if not match:
        raise ValueError(f"hydra.sweeper.params.{key}={spec!r} is not a search space; use float(lo, hi[, log]), "
                         f"int(lo, hi[, log]) or choice(a, b, ...)")
    kind, args = match.group(1), [a.strip() for a in match.group(2).split(",") if a.strip()]
    if kind == "choice":
        if not args:
            raise ValueError(f"hydra.sweeper.params.{key}: choice() needs at least one value")
        return Dimension("choice", choices=tuple(_literal(a) for a in args))
    log = len(args) == 3 and args[2] == "log"
    if len(args) not in (2, 3) or (len(args) == 3 and not log):
        raise ValueError(f"hydra.sweeper.params.{key}={spec!r}: {kind}(lo, hi) or {kind}(lo, hi, log)")
    low, high = (int(args[0]), int(args[1])) if kind == "int" else (float(args[0]), float(args[1]))
    if not low < high or (log and low <= 0):
        raise ValueError(f"hydra.sweeper.params.{key}={spec!r}: need lo < hi (and lo > 0 with log)")
    return Dimension(kind, low, high, log)


def parse_space(params: Dict[str, str]) -> Dict[str, Dimension]:
    if not params:
        raise ValueError("hydra.sweeper.params is empty: give at least one dimension to search")
    return {key: parse_dimension(key, spec) for key, spec in params.items()}
