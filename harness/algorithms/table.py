"""Plain-text table of the objectives: name, family, geometry, source, then parameters and defaults."""
from __future__ import annotations

import textwrap
from typing import Any, Callable, Dict, Mapping


def _value(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def render_table(specs: Mapping[str, Any], defaults: Callable[[str], Dict[str, Any]]) -> str:
    """One row per objective (sorted), each followed by its wrapped `key=default` list and shortcuts."""
    names = sorted(specs)
    head = ("name", "family", "geometry", "source")
    rows = [(n, specs[n].family, specs[n].geometry, specs[n].source) for n in names]
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(3)]

    def line(cells):
        return "  ".join(c.ljust(w) for c, w in zip(cells[:3], widths)) + "  " + cells[3]

    out = [line(head), line(tuple("-" * w for w in widths) + ("-" * 6,))]
    indent = " " * (widths[0] + 2)
    for row in rows:
        name = row[0]
        out.append(line(row))
        params = ", ".join(f"{k}={_value(v)}" for k, v in defaults(name).items())
        if name == "dppo":
            params += "  (delta=null: 0.15 for TV, 0.05 for KL)"
        out.extend(textwrap.wrap("params: " + params, width=110, initial_indent=indent,
                                 subsequent_indent=indent + "        "))
        shortcuts = specs[name].shortcuts
        if shortcuts:
            out.append(indent + "shortcuts: " + ", ".join(f"{s}= sets {p}" for s, p in shortcuts.items()))
    return "\n".join(out)
