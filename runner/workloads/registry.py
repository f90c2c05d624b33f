"""The workload registry: every adapter module in this package, found by name.

An adapter is a :class:`~runner.workloads.base.Workload` subclass with a ``name`` in a module of
``runner.workloads``; importing the package's modules registers them, so adding a driver is
adding one module (plus its contract-test fixtures) — nothing else lists drivers.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Mapping
from functools import cache

from flushbench.errors import ConfigError
from flushbench.validation import did_you_mean
from runner.workloads.base import Workload

#: Modules of the package that hold shared machinery or parsers, not adapters.
_NOT_ADAPTERS = ("base", "registry")


@cache
def adapters() -> dict[str, type[Workload]]:
    """Driver name → adapter class, for every adapter module in ``runner.workloads``."""
    import runner.workloads as package

    for info in pkgutil.iter_modules(package.__path__):
        if info.name not in _NOT_ADAPTERS and not info.name.endswith("_output"):
            importlib.import_module(f"{package.__name__}.{info.name}")
    found: dict[str, type[Workload]] = {}
    pending = list(Workload.__subclasses__())
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if cls.name and cls.__module__.startswith(package.__name__ + "."):
            found[cls.name] = cls
    return dict(sorted(found.items()))


def driver_names() -> tuple[str, ...]:
    """The driver names experiment files may use (``workload.driver``, ``dataset.loader``)."""
    return tuple(adapters())


def adapter_class(driver_name: str) -> type[Workload]:
    """The adapter class for ``driver_name``.

    Raises
    ------
    ConfigError
        For an unknown driver name (with a did-you-mean).
    """
    try:
        return adapters()[driver_name]
    except KeyError:
        raise ConfigError(
            f"unknown workload driver {driver_name!r}",
            where="workload.driver",
            fix=did_you_mean(driver_name, driver_names()),
        ) from None


def get_workload(driver_name: str, binaries: Mapping[str, str] | None = None) -> Workload:
    """An adapter instance for ``driver_name``; ``binaries`` overrides where its executables are.

    Raises
    ------
    ConfigError
        For an unknown driver name.
    """
    return adapter_class(driver_name)(binaries)
