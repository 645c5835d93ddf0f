"""Grids given as Python values, written as the TOML text of a spec file.

The native side parses that text with the same code as ``tiersim sweep SPEC.toml``,
so a dict grid and a spec file with the same content name the same runs (the same
keys in the store). Writing TOML rather than passing JSON keeps the axes in the
order the dict gives them: the first axis is the outermost.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from numbers import Integral, Real
from typing import Any


#: The range of a TOML integer (64-bit signed).
_INT_MIN, _INT_MAX = -(2**63), 2**63 - 1


def dumps(table: Mapping[str, Any], origin: str = "grid", section_names: bool = True) -> str:
    """Returns ``table`` as TOML: its plain values first, then one ``[section]`` per
    value that is itself a mapping (whose own mappings become inline tables).

    A value TOML cannot hold raises ``TypeError`` or ``ValueError`` naming ``origin``
    and the value's key, with its section unless not ``section_names`` (a single
    run's options, whose one section the caller never wrote)."""
    lines = []
    sections = []
    for key, value in table.items():
        if isinstance(value, Mapping):
            sections.append((key, value))
        else:
            lines.append(f"{_key(key)} = {_value(value, f'{origin} {key}')}")
    for name, section in sections:
        lines.append(f"[{_key(name)}]")
        for key, value in section.items():
            at = f"{origin} {name}.{key}" if section_names else f"{origin} {key}"
            lines.append(f"{_key(key)} = {_value(value, at)}")
    return "\n".join(lines) + "\n"


def _key(key: object) -> str:
    if not isinstance(key, str):
        raise TypeError(f"grid key {key!r}: keys are strings")
    return _string(key)


def _string(text: str) -> str:
    # JSON's escapes are TOML's, except that TOML wants DEL escaped too.
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def _value(value: object, at: str) -> str:
    """Returns ``value`` as a TOML literal; ``at`` names it in errors."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Integral):
        if not _INT_MIN <= int(value) <= _INT_MAX:
            raise ValueError(f"{at}: {int(value)} is too large: whole numbers must fit 64 bits (at most 2**63 - 1)")
        return str(int(value))
    if isinstance(value, Real):
        return repr(float(value))
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, os.PathLike):
        return _string(os.fspath(value))
    if isinstance(value, Mapping):
        items = ", ".join(f"{_key(k)} = {_value(v, f'{at}.{k}')}" for k, v in value.items())
        return "{ " + items + " }" if items else "{}"
    if isinstance(value, (list, tuple, range)):
        return "[" + ", ".join(_value(v, at) for v in value) + "]"
    raise TypeError(f"{at}: cannot use a {type(value).__name__} as a value (use strings, numbers, booleans, lists and dicts)")
