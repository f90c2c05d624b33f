"""The typed knob models of experiment files, generated from the knob table.

:class:`Knobs` holds one value per knob (``fixed``, ``include``, ``exclude``, ``baseline``);
:class:`Matrix` holds a list of levels per knob. Both have a ``variables`` mapping for raw server
variables, whose names and values are checked here before they can reach a my.cnf line or a
SQL statement.
"""

from __future__ import annotations

import math
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, create_model, field_validator, model_validator

from core.experiment.knob_table import KNOB_NAMES, KNOBS
from core.validation import KeyedValueError, StrictModel

RawScalar = int | float | bool | str

_VARIABLE_NAME_CHARS = set("abcdefghijklmnopqrstuvwxyz0123456789_")


def check_variable_name(name: str) -> str:
    """The underscored lowercase spelling of a raw variable name, or a KeyedValueError."""
    normalized = name.strip().lower().replace("-", "_")
    if not normalized or not set(normalized) <= _VARIABLE_NAME_CHARS:
        raise KeyedValueError(
            f"'{name}' is not a server variable name (letters, digits, '_' or '-' only)", name
        )
    return normalized


def check_raw_value(value: Any, *loc: str | int) -> Any:
    """``value`` unchanged when it is safe in a my.cnf line and a SET statement."""
    # Values reach my.cnf lines and SET statements: refuse anything that could break out.
    if isinstance(value, str) and (
        any(c in value for c in "#;'\"`\\")
        or any(ord(c) < 0x20 or ord(c) == 0x7F for c in value)
        or not value.strip()
    ):
        raise KeyedValueError(
            f"value {value!r} is not allowed in a server variable"
            " (no quotes, backslashes, control characters, ';' or '#')",
            *loc,
        )
    if isinstance(value, str) and value != value.strip():
        # The my.cnf writer refuses them too: what validate accepts, a run must accept.
        raise KeyedValueError(f"value {value!r} has leading or trailing spaces — remove them",
                              *loc)
    if isinstance(value, float) and not math.isfinite(value):
        raise KeyedValueError(f"value {value} is not a finite number", *loc)
    return value


def _normalized_names(value: dict, *loc: str) -> dict[str, str]:
    """Original key → underscored name; two spellings of one variable are an error."""
    seen: dict[str, str] = {}
    for key in value:
        name = check_variable_name(str(key))
        if name in seen:
            raise KeyedValueError(
                f"'{seen[name]}' and '{key}' are the same server variable ({name}) — keep one",
                *loc, str(key),
            )
        seen[name] = str(key)
    return {original: name for name, original in seen.items()}


def _as_list(value: Any) -> Any:
    """A matrix axis may be written as a scalar (one level) or a list of levels."""
    if value is None or isinstance(value, list):
        return value
    return [value]


class _KnobsBase(StrictModel):
    variables: dict[str, RawScalar] = Field(default_factory=dict)

    @field_validator("variables", mode="before")
    @classmethod
    def _variables(cls, value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        names = _normalized_names(value)
        return {names[str(k)]: check_raw_value(v, str(k)) for k, v in value.items()}

    @model_validator(mode="after")
    def _cross_knob(self) -> _KnobsBase:
        io, io_max = getattr(self, "io_capacity", None), getattr(self, "io_capacity_max", None)
        if io is not None and io_max is not None and io > io_max:
            raise KeyedValueError(
                f"io_capacity {io} exceeds io_capacity_max {io_max}"
                " — raise io_capacity_max or lower io_capacity",
                "io_capacity",
            )
        pct = getattr(self, "max_dirty_pages_pct", None)
        lwm = getattr(self, "max_dirty_pages_pct_lwm", None)
        if pct is not None and lwm is not None and lwm > pct:
            raise KeyedValueError(
                "max_dirty_pages_pct_lwm is above max_dirty_pages_pct — lower the lwm",
                "max_dirty_pages_pct_lwm",
            )
        return self

    def values(self) -> dict[str, Any]:
        """The knobs that are set, in display order, ``variables`` flattened as ``var.NAME``."""
        out: dict[str, Any] = {}
        for name in KNOB_NAMES:
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        for name, value in sorted(self.variables.items()):
            out[f"var.{name}"] = value
        return out

    @classmethod
    def from_values(cls, values: dict[str, Any]) -> Knobs:
        """The inverse of :meth:`values`: ``var.NAME`` keys become ``variables``."""
        plain = {k: v for k, v in values.items() if not k.startswith("var.")}
        raw = {k[4:]: v for k, v in values.items() if k.startswith("var.")}
        return Knobs(**plain, variables=raw)


Knobs = create_model(
    "Knobs",
    __base__=_KnobsBase,
    __doc__="One value for each logical knob (all optional: unset means the base my.cnf decides).",
    **{k.name: (k.level | None, None) for k in KNOBS},
)


class _MatrixBase(StrictModel):
    variables: dict[str, Annotated[list[RawScalar], BeforeValidator(_as_list)]] = Field(
        default_factory=dict
    )

    @field_validator("variables", mode="before")
    @classmethod
    def _variables(cls, value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        names = _normalized_names(value)
        out = {}
        for k, v in value.items():
            levels = v if isinstance(v, list) else [v]
            out[names[str(k)]] = [check_raw_value(x, str(k), i) for i, x in enumerate(levels)]
        return out

    @model_validator(mode="after")
    def _no_empty_axis(self) -> _MatrixBase:
        for name in KNOB_NAMES:
            if getattr(self, name) == []:
                raise KeyedValueError("empty list — give at least one level", name)
        for name, levels in self.variables.items():
            if not levels:
                raise KeyedValueError("empty list — give at least one level", "variables", name)
        return self

    def axes(self) -> dict[str, list[Any]]:
        """The axes in display order; raw variables become ``var.NAME`` axes."""
        out: dict[str, list[Any]] = {}
        for name in KNOB_NAMES:
            levels = getattr(self, name)
            if levels is not None:
                out[name] = list(levels)
        for name, levels in sorted(self.variables.items()):
            out[f"var.{name}"] = list(levels)
        return out


Matrix = create_model(
    "Matrix",
    __base__=_MatrixBase,
    __doc__="The axes of the experiment: each knob lists its levels; the cells are their product.",
    **{
        k.name: (Annotated[list[k.level] | None, BeforeValidator(_as_list)], None)
        for k in KNOBS
    },
)
