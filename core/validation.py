"""Strict pydantic base model and error rendering that names file, key path and fix."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Annotated, Any, Literal, get_args, get_origin

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from core.errors import ConfigError, bounded, quote


def close_matches(name: str, choices: Iterable[str], n: int = 1, cutoff: float = 0.6) -> list[str]:
    """The choices that look like ``name`` (a typo), best first."""
    return difflib.get_close_matches(str(name), sorted(choices), n=n, cutoff=cutoff)


def did_you_mean(name: str, choices: Iterable[str], cutoff: float = 0.5) -> str:
    """``did you mean 'x'? (available: a, b)`` — or just the list when nothing is close."""
    choices = sorted(choices)
    close = close_matches(name, choices, cutoff=cutoff)
    listing = "available: " + (", ".join(choices) or "(none)")
    return f"did you mean '{close[0]}'? ({listing})" if close else listing


class KeyedValueError(ValueError):
    """A validation error that knows which key (relative to the model) it is about.

    Model-level validators raise it so the message says ``window: …`` or
    ``workload.driver: …`` instead of ``(top level): …``.
    """

    def __init__(self, message: str, *loc: str | int) -> None:
        super().__init__(message)
        self.loc = loc


class StrictModel(BaseModel):
    """Base for every config model: unknown keys are errors, with a did-you-mean."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @model_validator(mode="before")
    @classmethod
    def _unknown_keys(cls, data: Any) -> Any:
        # Done here rather than by extra="forbid" alone so the message can suggest a key.
        if isinstance(data, dict):
            allowed = set(cls.model_fields) | {
                f.alias for f in cls.model_fields.values() if f.alias
            }
            for key in data:
                if key not in allowed:
                    close = close_matches(bounded(str(key), 80), allowed)
                    hint = (
                        f"did you mean '{close[0]}'?"
                        if close
                        else ("allowed keys: " + ", ".join(sorted(allowed)))
                    )
                    raise KeyedValueError(f"unknown key {quote(str(key))} — {hint}",
                                          bounded(str(key), 80))
            for key, value in data.items():
                # YAML's true/false are Python ints: `repetitions: true` would be 1.
                if isinstance(value, bool) and _wants_number(cls, str(key)):
                    raise KeyedValueError(f"expected a number, got {value}", str(key))
        return data


def _wants_number(model: type[BaseModel], key: str) -> bool:
    """Whether ``key`` of ``model`` takes a number and never a boolean."""
    field = model.model_fields.get(key) or next(
        (f for f in model.model_fields.values() if f.alias == key), None)
    if field is None:
        return False
    kinds: set[Any] = set()

    def collect(tp: Any) -> None:
        args = get_args(tp)
        if get_origin(tp) is Annotated:
            collect(args[0])
        elif args and get_origin(tp) is not Literal:
            for arg in args:
                collect(arg)
        else:
            kinds.add(tp)

    collect(field.annotation)
    return bool(kinds & {int, float}) and bool not in kinds and not kinds - {int, float,
                                                                               type(None)}


def format_loc(loc: tuple[Any, ...]) -> str:
    """Render a pydantic error location as ``matrix.io_capacity[1]``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif str(part).startswith(("function-", "tagged-union", "list[", "union[", "one-of:")):
            continue  # validator-internal steps (and our union tags) say nothing to a user
        else:
            out += ("." if out else "") + str(part)
    return out or "(top level)"


def error_location(err: dict[str, Any]) -> str:
    """Where one pydantic error is, as ``matrix.io_capacity[1]`` (a KeyedValueError's key too)."""
    loc = tuple(err["loc"])
    cause = (err.get("ctx") or {}).get("error")
    if isinstance(cause, KeyedValueError):
        loc += cause.loc
    return bounded(format_loc(loc), 200)


def problem_message(err: dict[str, Any]) -> str:
    """One pydantic error as a message, quoting at most a bounded prefix of the value."""
    return _message(err)


#: An invalid file lists at most this many problems (a value aliased 10,000 times is one).
MAX_PROBLEMS = 20


def _message(err: dict[str, Any]) -> str:
    msg = str(err.get("msg", ""))
    for prefix in ("Value error, ", "Assertion failed, "):
        if msg.startswith(prefix):
            msg = msg[len(prefix) :]
    if err.get("type") == "missing":
        return "required key is missing"
    if (
        "input" in err
        and err.get("type") not in ("missing", "value_error")
        and not isinstance(err["input"], (dict, list))
    ):
        msg += f" (got {quote(err['input'])})"
    return bounded(msg, 400)


def config_error_from(
    exc: ValidationError, source: str | Path, fix: str | None = None
) -> ConfigError:
    """Turn a pydantic ValidationError into one ConfigError listing every problem.

    Each problem is one line ``<file>: <key path>: <message>``.
    """
    lines = []
    seen: set[str] = set()
    errors = exc.errors(include_input=True, include_url=False)
    for err in errors:
        if len(lines) == MAX_PROBLEMS:
            lines.append(f"… and more problems (only the first {MAX_PROBLEMS} are listed)")
            break
        line = f"{source}: {error_location(err)}: {_message(err)}"
        if line not in seen:
            seen.add(line)
            lines.append(line)
    what = lines[0] if len(lines) == 1 else "invalid configuration:\n  " + "\n  ".join(lines)
    return ConfigError(what, fix=fix, problems=lines)


def load_versioned(path: Path, model: type[BaseModel], kind: str,
                   raw_check: Callable[[dict[str, Any]], None] | None = None) -> Any:
    """Read a ``version: 1`` YAML file and validate it as ``model``.

    Every problem is a :class:`ConfigError` naming the file and key path; ``kind`` says what the
    file is in messages ("experiment", "server profile"). ``raw_check`` looks at the file's
    raw data first (rules for what a *file* may say, e.g. no key without a value) and raises
    :class:`KeyedValueError`.
    """
    from core.yamlio import read_yaml_mapping  # yamlio imports errors only: no cycle

    data = read_yaml_mapping(path)
    if "version" not in data:
        raise ConfigError(
            f"missing `version` in this {kind} file",
            where=f"{path}: version",
            fix="add `version: 1` at the top",
        )
    if type(data.get("version")) is not int or data.get("version") != 1:  # True == 1 in Python
        raise ConfigError(
            f"unsupported version {quote(data.get('version'))}",
            where=f"{path}: version",
            fix=f"this flushbench reads `version: 1` files (this is a {kind} file)",
        )
    if raw_check is not None:
        try:
            raw_check(data)
        except KeyedValueError as exc:
            raise ConfigError(str(exc), where=f"{path}: {format_loc(exc.loc)}") from None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise config_error_from(exc, path) from None
