"""One command's reading of the store: the same question asked twice is read once.

A verb's parts each ask the store for what they need — ``show`` alone asks for its run's rows
eight times and its window six (its summary, its response time, its cycles, its write path…),
each time through SQLAlchemy and pandas. Inside :func:`one_reading`, a reader decorated with
:func:`read_once` answers a question it has answered before, on the same open
:class:`~store.db.ResultsDB` or session with the same arguments, from what it read then.

The scope is explicit and short — one command — because a store may be written while it is
read (a queue running beside a notebook): outside a scope every call reads the store again,
and a handle given as a path is never remembered. Each caller gets its own shallow copy of a
remembered frame (pandas' copy-on-write keeps the remembered one as it was read).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, ParamSpec, TypeVar

import pandas as pd
from sqlalchemy.orm import Session

from store.db import ResultsDB

P = ParamSpec("P")
R = TypeVar("R")

#: The answers read in the current scope (None: no scope, read every time).
_ANSWERS: ContextVar[dict[Any, Any] | None] = ContextVar("flushbench_answers", default=None)


@contextmanager
def one_reading() -> Iterator[None]:
    """Within this block, :func:`read_once` readers read each question once (see the module
    docstring); nested blocks share the outer block's answers."""
    if _ANSWERS.get() is not None:
        yield
        return
    token = _ANSWERS.set({})
    try:
        yield
    finally:
        _ANSWERS.reset(token)


def read_once(reader: Callable[P, R]) -> Callable[P, R]:
    """Decorate a reader whose first argument is the store: inside :func:`one_reading`, a call
    on an open :class:`~store.db.ResultsDB` (or session) with arguments seen before returns a
    copy of the first call's result."""

    @functools.wraps(reader)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        answers = _ANSWERS.get()
        if answers is None or not args or not isinstance(args[0], ResultsDB | Session):
            return reader(*args, **kwargs)
        try:
            key = (reader.__qualname__, args[0], _frozen(args[1:]), _frozen(kwargs))
            hash(key)
        except TypeError:  # an argument that cannot be a key: read it again
            return reader(*args, **kwargs)
        if key not in answers:
            answers[key] = reader(*args, **kwargs)
        return _copy(answers[key])

    return wrapper


def _frozen(value: Any) -> Any:
    """``value`` as a hashable key: lists and tuples as tuples, dicts as sorted item tuples."""
    if isinstance(value, list | tuple):
        return tuple(_frozen(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _frozen(v)) for k, v in value.items()))
    return value


def _copy(value: Any) -> Any:
    """A caller's own copy of a remembered answer: frames and series shallow-copied (copy on
    write), tuples, lists and dicts rebuilt around copies of their items."""
    if isinstance(value, pd.DataFrame | pd.Series):
        return value.copy(deep=False)
    if isinstance(value, tuple):
        return tuple(_copy(v) for v in value)
    if isinstance(value, list):
        return [_copy(v) for v in value]
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    return value
