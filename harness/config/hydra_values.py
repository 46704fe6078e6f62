"""A value from a sweep file as one Hydra override, of its own type: never spliced into the override's
grammar (a string holding a comma is one string, not a sweep of two)."""
from __future__ import annotations

import re
from typing import Any

_BARE = re.compile(r"^[A-Za-z_][A-Za-z0-9_./-]*$")
_KEYWORDS = {"null", "true", "false", "inf", "nan"}


def override(key: str, value: Any) -> str:
    """`key=value` for Hydra with `value` taken as ONE value of its own type: a string is quoted unless it is a
    plain name, so `"e1,e2"` stays one string, not a sweep of two. ValueError when Hydra would read it back
    as something else."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import OverrideParseException

    if value is None:
        text = "null"
    elif isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, (int, float)):
        text = repr(value)
    elif _BARE.match(value) and value.lower() not in _KEYWORDS:
        text = value
    else:
        text = "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    item = f"{key}={text}"
    try:
        parsed, = OverridesParser.create().parse_overrides([item])
        read_back = parsed.value()
    except OverrideParseException:
        raise ValueError(f"{value!r} cannot be given to Hydra as one value") from None
    if parsed.is_sweep_override() or read_back != value or type(read_back) is not type(value):
        raise ValueError(f"{value!r} cannot be given to Hydra as one value")
    return item
