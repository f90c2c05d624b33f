"""The workload registry: every adapter module in this package, found by name.

An adapter is a :class:`~runner.workloads.base.Workload` subclass with a ``name`` in a module of
``runner.workloads``; importing the package's modules registers them, so adding a driver is
adding one module (plus its contract-test fixtures) — nothing else lists drivers.

Importing it installs the host's look for tpcc_start into the experiment model, which resolves
``workload.driver: auto`` (the default) to one TPC-C client: see :func:`probe_tpcc_start`,
:func:`core.experiment.drivers.choose_auto` and docs/tpcc.md, "Which client runs".
"""

from __future__ import annotations

import importlib
import os
import pkgutil
from collections.abc import Mapping
from functools import cache

from core.experiment.drivers import (
    GO_CLIENT_RESIDUAL,
    DriverChoice,
    chosen,
    driver_def,
    install_tpcc_start_probe,
)
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
    driver_def(driver_name)  # an unknown name: the model's error, with its did-you-mean
    return adapters()[driver_name]


def get_workload(driver_name: str, binaries: Mapping[str, str] | None = None) -> Workload:
    """An adapter instance for ``driver_name``; ``binaries`` overrides where its executables are.

    Raises
    ------
    ConfigError
        For an unknown driver name.
    """
    return adapter_class(driver_name)(binaries)


def probe_tpcc_start(binaries: Mapping[str, str] | None = None) -> DriverChoice:
    """The host's answer to ``workload.driver: auto`` once the file decided nothing
    (:func:`core.experiment.drivers.choose_auto`): ``tpcc-mysql`` when the adapter finds
    ``tpcc_start`` where a run will look — ``workload.binaries.tpcc_start``, ``$TPCC_MYSQL_BIN``
    (the checkout), PATH — else ``tpcc`` (the Go driver), with the sentence saying why.

    tpcc-mysql's ``tpcc_start`` is the reference client (the Go client reaches 1.03–1.12× its
    TpmC under contention). ``tpcc_load`` is not needed: the dataset's default loader is the Go
    ``tpcc load``, whose data both clients run on. Installed into the experiment model when this
    module is imported.
    """
    from runner.workloads.tpcc_mysql import TPCC_MYSQL_ENV, TpccMysqlWorkload, tpcc_mysql_dir

    go = "using flushbench's Go driver"
    adapter = TpccMysqlWorkload(binaries)
    problems = adapter.problems()
    if adapter.start_binary is not None and not problems:
        base = tpcc_mysql_dir()
        where = TPCC_MYSQL_ENV if base and adapter.start_binary.parent == base else "PATH"
        return chosen("tpcc-mysql", f"using tpcc-mysql's tpcc_start ({adapter.start_binary},"
                      f" found via {where})")
    if adapter.start_binary is not None:  # found but unusable: say what is wrong with it
        missing = problems[0].split(" — ")[0]
    elif env := os.environ.get(TPCC_MYSQL_ENV):
        missing = f"tpcc_start not found in {TPCC_MYSQL_ENV} ({env}) or on PATH"
    else:
        missing = f"tpcc_start not found on PATH or in {TPCC_MYSQL_ENV} (unset)"
    return chosen("tpcc", f"{missing}: {go} ({GO_CLIENT_RESIDUAL})")


install_tpcc_start_probe(probe_tpcc_start)
