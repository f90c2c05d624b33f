"""Experiment dicts with a patch applied: the table-driven bad-input tests build on one base."""

from __future__ import annotations

import copy
from typing import Any

#: In a patch, removes the key from the base.
DELETE = object()


def merge(base: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """``base`` with ``patch`` applied recursively (``DELETE`` removes a key)."""
    out = copy.deepcopy(base)
    for key, value in patch.items():
        if value is DELETE:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out
