"""The workload registry: every adapter module in this package, found by name.

An adapter is a :class:`~runner.workloads.base.Workload` subclass with a ``name`` in a module of
``runner.workloads``; importing the package's modules registers them, so adding a driver is
adding one module (plus its contract-test fixtures) — nothing else lists drivers.

It also resolves ``workload.driver: auto`` (the default) to one TPC-C client: see
:func:`resolve_driver` and docs/tpcc.md, "Which client runs".
"""

from __future__ import annotations

import importlib
import logging
import os
import pkgutil
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache

from core.errors import ConfigError
from core.validation import did_you_mean
from runner.workloads.base import Workload

log = logging.getLogger(__name__)

#: Modules of the package that hold shared machinery or parsers, not adapters.
_NOT_ADAPTERS = ("base", "registry")
#: ``workload.driver: auto``: tpcc-mysql's tpcc_start when it is found, else the Go driver.
AUTO_DRIVER = "auto"
#: The Go client's TpmC against tpcc_start's on the measured grid (docs/tpcc.md, issue 40).
GO_CLIENT_RESIDUAL = "1.03–1.12× tpcc_start's TpmC, docs/tpcc.md"


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


@dataclass(frozen=True)
class DriverChoice:
    """What ``workload.driver: auto`` resolved to, and the sentence saying why."""

    driver: str
    reason: str


def resolve_driver(binaries: Mapping[str, str] | None = None, *,
                   mode: str | None = None, rate: object = None) -> DriverChoice:
    """Resolve ``workload.driver: auto`` to ``tpcc-mysql`` or ``tpcc`` (the Go driver).

    tpcc-mysql's ``tpcc_start`` is the reference client (the Go client reaches 1.03–1.12× its
    TpmC under contention): it is chosen when the adapter finds it where a run will look —
    ``workload.binaries.tpcc_start``, ``$TPCC_MYSQL_BIN`` (the checkout), PATH. A
    ``tpcc_start`` named in ``workload.binaries`` is chosen even when missing, so preflight
    reports the path the user wrote instead of silently measuring with the other client.
    ``tpcc_load`` is not needed: the dataset's default loader is the Go ``tpcc load``, whose
    data both clients run on. ``mode`` is an option of the Go driver only, so it keeps it; so
    is ``rate`` (tpcc_start runs a closed loop: it cannot hold a fixed rate).
    Called once, when an experiment file is validated; the queue and every run store the
    resolved name, so a resumed queue never switches clients.
    """
    from runner.workloads.tpcc_mysql import TPCC_MYSQL_ENV, TpccMysqlWorkload, tpcc_mysql_dir

    go = "using flushbench's Go driver"
    if mode is not None:
        return _chosen("tpcc", f"workload.mode is the Go driver's option: {go}")
    if rate is not None:
        return _chosen("tpcc", "a fixed rate (`rate`) needs a driver that holds one, and"
                       f" tpcc_start runs a closed loop: {go}")
    if named := (binaries or {}).get("tpcc_start"):
        return _chosen("tpcc-mysql",
                       f"using tpcc-mysql's tpcc_start from workload.binaries ({named})")
    adapter = TpccMysqlWorkload(binaries)
    problems = adapter.problems()
    if adapter.start_binary is not None and not problems:
        base = tpcc_mysql_dir()
        where = TPCC_MYSQL_ENV if base and adapter.start_binary.parent == base else "PATH"
        return _chosen("tpcc-mysql", f"using tpcc-mysql's tpcc_start ({adapter.start_binary},"
                       f" found via {where})")
    if adapter.start_binary is not None:  # found but unusable: say what is wrong with it
        missing = problems[0].split(" — ")[0]
    elif env := os.environ.get(TPCC_MYSQL_ENV):
        missing = f"tpcc_start not found in {TPCC_MYSQL_ENV} ({env}) or on PATH"
    else:
        missing = f"tpcc_start not found on PATH or in {TPCC_MYSQL_ENV} (unset)"
    return _chosen("tpcc", f"{missing}: {go} ({GO_CLIENT_RESIDUAL})")


def _chosen(driver: str, why: str) -> DriverChoice:
    """The choice, logged (``run`` and ``queue add`` show it at INFO)."""
    choice = DriverChoice(driver, f"workload.driver auto → {driver}: {why}")
    log.info("%s", choice.reason)
    return choice
