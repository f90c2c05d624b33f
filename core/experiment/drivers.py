"""The workload drivers as static facts: every driver declared once, the way knobs are a table.

An experiment names a driver (``workload.driver``, ``dataset.loader``); to validate the file the
model needs only facts about it — the dataset kind it runs on, its primary metric, which
``workload:`` options are its own, which it cannot run without, whether it holds a fixed rate.
Those facts live here, so the model never imports the adapters that run the drivers
(``runner/workloads/``); the adapters declare the same name, dataset kind and metric, and a test
(``tests/runner/workloads/test_driver_table.py``) checks the registry and this table agree.

``workload.driver: auto`` is the one question the table cannot answer alone: whether tpcc-mysql's
``tpcc_start`` is on this host. :func:`choose_auto` answers what the file decides (``mode`` and
``rate`` are the Go driver's; a named ``tpcc_start``); the host's look for tpcc_start is asked of
the probe the workload registry installs (:func:`install_tpcc_start_probe`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal, Protocol

from core.errors import ConfigError
from core.validation import did_you_mean

log = logging.getLogger(__name__)

#: ``workload.driver: auto``: tpcc-mysql's tpcc_start when it is found, else the Go driver.
AUTO_DRIVER = "auto"
#: The Go client's TpmC against tpcc_start's on the measured grid (docs/tpcc.md, issue 40).
GO_CLIENT_RESIDUAL = "1.03–1.12× tpcc_start's TpmC, docs/tpcc.md"


@dataclass(frozen=True)
class Metric:
    """A workload's primary throughput figure, as tables and figures name it.

    ``per_minute`` says whether the rate is per minute (NOTPM) or per second (TPS); the store
    keeps raw counts per interval (``primary_count``) and the analysis scales them.
    """

    name: str
    unit: str
    #: What one ``primary_count`` counts ("New-Order transactions", "transactions").
    counts: str
    per_minute: bool


NOTPM = Metric("NOTPM", "New-Order transactions per minute", "New-Order transactions",
               per_minute=True)
TPS = Metric("TPS", "transactions per second", "transactions", per_minute=False)

class WorkloadOptions(Protocol):
    """The options of the ``workload:`` section a driver's facts are checked against
    (:class:`core.experiment.sections.WorkloadSpec` has them; named here so that this table
    stays below the sections that use it)."""

    test: str | None
    mode: str | None
    client: str | None
    rate: float | None
    arrivals: str | None


#: A problem of the ``workload:`` section: the message and the key path under ``workload``.
SpecProblem = tuple[str, tuple[str, ...]]


def _libmariadb_is_tpcc_mysql_mode(spec: WorkloadOptions) -> SpecProblem | None:
    """The C client runs the tpcc-mysql mode only."""
    if spec.client == "libmariadb" and spec.mode == "batched":
        return ("client: libmariadb runs the tpcc-mysql mode only — remove `mode: "
                "batched` or use `client: go`", ("client",))
    return None


@dataclass(frozen=True)
class DriverDef:
    """One workload driver, as the experiment model sees it.

    Attributes
    ----------
    name:
        The name experiment files use (``workload.driver``, ``dataset.loader``).
    dataset_kind:
        The dataset it runs on and can load (``dataset.workload``).
    metric:
        Its primary throughput figure.
    own_options:
        ``workload:`` options only this driver reads (``mode``, ``client``; ``test``).
    required:
        Option → an example value, for the options it cannot run without.
    holds_rate:
        Whether it can hold a fixed rate (``workload.rate``); the others run a closed loop.
    combinations:
        Rules over several of its options together, each a problem or None.
    """

    name: str
    dataset_kind: Literal["tpcc", "sysbench"]
    metric: Metric = NOTPM
    own_options: tuple[str, ...] = ()
    required: tuple[tuple[str, str], ...] = ()
    holds_rate: bool = False
    combinations: tuple[Callable[[WorkloadOptions], SpecProblem | None], ...] = ()


#: Every driver, in name order (the order ``driver_names`` lists them).
DRIVERS: tuple[DriverDef, ...] = (
    DriverDef("sysbench", "sysbench", metric=TPS, own_options=("test",),
              required=(("test", "oltp_read_only"),)),
    DriverDef("tpcc", "tpcc", own_options=("mode", "client"), holds_rate=True,
              combinations=(_libmariadb_is_tpcc_mysql_mode,)),
    DriverDef("tpcc-mysql", "tpcc"),
)
#: Driver name → its definition.
DRIVER_BY_NAME: dict[str, DriverDef] = {d.name: d for d in DRIVERS}
#: The driver names experiment files may use.
DRIVER_NAMES: tuple[str, ...] = tuple(DRIVER_BY_NAME)
#: The options some driver owns, in the order their problems are reported.
_OWNED_OPTIONS = ("test", "mode", "client")


def driver_def(name: str) -> DriverDef:
    """The definition of driver ``name``.

    Raises
    ------
    ConfigError
        For an unknown driver name (with a did-you-mean).
    """
    try:
        return DRIVER_BY_NAME[name]
    except KeyError:
        raise ConfigError(
            f"unknown workload driver {name!r}",
            where="workload.driver",
            fix=did_you_mean(name, DRIVER_NAMES),
        ) from None


def _owner(option: str) -> str:
    """The driver that owns ``option`` (``mode`` → tpcc)."""
    return next(d.name for d in DRIVERS if option in d.own_options)


def spec_problems(driver: DriverDef, spec: WorkloadOptions) -> list[SpecProblem]:
    """Problems of the ``workload:`` section for ``driver``: (message, key path) pairs; the
    first one is reported."""
    for option, example in driver.required:
        if getattr(spec, option) is None:
            return [(f"the {driver.name} driver needs `{option}` (e.g. {example})", (option,))]
    for option in _OWNED_OPTIONS:
        if option not in driver.own_options and getattr(spec, option) is not None:
            return [(f"`{option}` is only for the {_owner(option)} driver", (option,))]
    for rule in driver.combinations:
        if problem := rule(spec):
            return [problem]
    if not driver.holds_rate and (problem := closed_loop_rate(driver.name, spec)):
        return [problem]
    return []


def closed_loop_rate(driver: str, spec: WorkloadOptions) -> SpecProblem | None:
    """The problem of a ``rate`` (or ``arrivals``) given to a closed-loop driver, which
    cannot hold one; None without."""
    key = "rate" if spec.rate is not None else "arrivals" if spec.arrivals is not None else None
    if key is None:
        return None
    return (f"`{key}` needs the Go tpcc driver: {driver} runs a closed loop and cannot hold a"
            " fixed rate — use `driver: tpcc` (or `auto`), or remove `rate`", (key,))


@dataclass(frozen=True)
class DriverChoice:
    """What ``workload.driver: auto`` resolved to, and the sentence saying why."""

    driver: str
    reason: str


#: The host's look for tpcc_start: ``workload.binaries`` → a choice (installed by the workload
#: registry, which knows where the tpcc-mysql adapter looks).
TpccStartProbe = Callable[[Mapping[str, str] | None], DriverChoice]
_probe: TpccStartProbe | None = None


def install_tpcc_start_probe(probe: TpccStartProbe) -> None:
    """Set the host's look for tpcc_start that :func:`choose_auto` asks (the workload
    registry installs its own when it is imported)."""
    global _probe
    _probe = probe


def choose_auto(binaries: Mapping[str, str] | None = None, *, mode: str | None = None,
                rate: object = None) -> DriverChoice:
    """Resolve ``workload.driver: auto`` to ``tpcc-mysql`` or ``tpcc`` (the Go driver).

    ``mode`` is an option of the Go driver only, so it keeps it; so is ``rate`` (tpcc_start
    runs a closed loop: it cannot hold a fixed rate). A ``tpcc_start`` named in
    ``workload.binaries`` is chosen even when missing, so preflight reports the path the user
    wrote instead of silently measuring with the other client. Otherwise the host decides: the
    installed probe looks where a run will look. Called once, when an experiment file is
    validated; the queue and every run store the resolved name, so a resumed queue never
    switches clients.

    Raises
    ------
    ValueError
        When the host must be asked and no probe is installed (nothing imported the
        workload registry): the message says to name the driver.
    """
    go = "using flushbench's Go driver"
    if mode is not None:
        return chosen("tpcc", f"workload.mode is the Go driver's option: {go}")
    if rate is not None:
        return chosen("tpcc", "a fixed rate (`rate`) needs a driver that holds one, and"
                      f" tpcc_start runs a closed loop: {go}")
    if named := (binaries or {}).get("tpcc_start"):
        return chosen("tpcc-mysql",
                      f"using tpcc-mysql's tpcc_start from workload.binaries ({named})")
    if _probe is None:
        raise ValueError("`driver: auto` looks for tpcc_start on this host, and no host look"
                         " is installed here (the runner is not imported) — name the"
                         f" driver ({', '.join(DRIVER_NAMES)})")
    return _probe(binaries)


def chosen(driver: str, why: str) -> DriverChoice:
    """The choice, logged (``run`` and ``queue add`` show it at INFO)."""
    choice = DriverChoice(driver, f"workload.driver auto → {driver}: {why}")
    log.info("%s", choice.reason)
    return choice
