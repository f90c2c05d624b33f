"""Typed experiment files (``version: 1``) and matrix expansion.

An experiment file declares *what* to measure; nothing here touches a server. Knob values are
validated for type and range here; whether the chosen server has the variable (and its real
range) is checked later by :mod:`runner.admission.preflight` against the binary's option list.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import math
import random
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    BeforeValidator,
    Discriminator,
    Field,
    PrivateAttr,
    Tag,
    ValidationError,
    field_validator,
    model_validator,
)

from core.errors import ConfigError
from core.units import format_size, parse_duration
from core.validation import KeyedValueError, StrictModel, format_loc, load_versioned
from runner.experiment.file_credentials import no_credentials
from runner.experiment.references import (
    IncludeCell,
    ReferenceSpec,
    RowName,
    check_claims,
    check_references,
    row_name,
)
from runner.knobs import SIZE_KNOBS, Knobs, Matrix

if TYPE_CHECKING:
    from runner.workloads.base import Workload


def _to_seconds(value: Any) -> float:
    try:
        return parse_duration(value)
    except ValueError as exc:
        raise ValueError(str(exc)) from None


#: Longer than this is a typo (30 minutes is the classic run; a day is already a lot).
MAX_DURATION_S = 7 * 86400.0
#: The highest `workload.rate` (NOTPM): the Go driver's bound on --rate.
RATE_MAX_NOTPM = 10_000_000

Seconds = Annotated[float, BeforeValidator(_to_seconds), Field(ge=0, le=MAX_DURATION_S)]


def _variable_name(value: Any) -> Any:
    from runner.knobs.models import check_variable_name

    return check_variable_name(value) if isinstance(value, str) else value


#: The keys that give a dataset kind its scale (for messages).
_SCALE_KEYS = {"tpcc": "warehouses", "sysbench": "tables/table_size"}


def _adapter(driver: str) -> type[Workload]:
    """The registered adapter class of ``driver`` (a ValueError with a did-you-mean if none)."""
    from runner.workloads.registry import adapter_class  # adapters import this module's types

    try:
        return adapter_class(driver)
    except ConfigError as exc:
        raise ValueError(f"{exc.what} — {exc.fix}") from None


class DatasetSpec(StrictModel):
    """What data every run starts from (loaded once, snapshotted, restored per run)."""

    workload: Literal["tpcc", "sysbench"] = "tpcc"
    #: TPC-C scale (tpcc) — about 100 MB of InnoDB data per warehouse.
    warehouses: Annotated[int, Field(ge=1, le=100000)] | None = None
    #: sysbench scale: number of sbtest tables and rows per table.
    tables: Annotated[int, Field(ge=1, le=10000)] | None = None
    table_size: Annotated[int, Field(ge=1)] | None = None
    #: Which driver's loader builds the dataset (default: the dataset kind's own driver),
    #: e.g. ``tpcc-mysql`` for tpcc_load.
    loader: str | None = None
    #: Parallel loader workers (built-in tpcc loader).
    load_workers: Annotated[int, Field(ge=1, le=256)] | None = None

    @field_validator("loader")
    @classmethod
    def _known_loader(cls, value: str | None) -> str | None:
        if value is not None:
            _adapter(value)
        return value

    @model_validator(mode="after")
    def _scale(self) -> DatasetSpec:
        loader = _adapter(self.effective_loader)
        if loader.dataset_kind != self.workload:
            raise KeyedValueError(
                f"loader {self.effective_loader} loads {loader.dataset_kind} datasets,"
                f" not {self.workload}", "loader"
            )
        if self.workload == "tpcc":
            if self.warehouses is None:
                raise KeyedValueError(
                    "a tpcc dataset needs `warehouses` (e.g. warehouses: 2)", "warehouses"
                )
            if self.tables is not None or self.table_size is not None:
                raise KeyedValueError(
                    "`tables`/`table_size` are for sysbench datasets, not tpcc",
                    "tables" if self.tables is not None else "table_size",
                )
        else:
            if self.tables is None or self.table_size is None:
                raise KeyedValueError(
                    "a sysbench dataset needs `tables` and `table_size`",
                    "tables" if self.tables is None else "table_size",
                )
            if self.warehouses is not None:
                raise KeyedValueError(
                    "`warehouses` is for tpcc datasets, not sysbench", "warehouses"
                )
        return self

    @property
    def effective_loader(self) -> str:
        """The loader that will run: explicit, else the workload's own."""
        return self.loader or self.workload

    def scale_label(self) -> str:
        """``w10`` or ``t8x100000``: part of the dataset key and of file names."""
        if self.workload == "tpcc":
            return f"w{self.warehouses}"
        return f"t{self.tables}x{self.table_size}"


class WorkloadSpec(StrictModel):
    """The driver and how it runs (connections can also be a matrix axis)."""

    #: A driver the workload registry knows (``runner/workloads/``): tpcc, tpcc-mysql, sysbench,
    #: or ``auto`` (the default): tpcc-mysql when its tpcc_start is found, else the Go ``tpcc``.
    #: ``auto`` is resolved when the file is validated; only the resolved name is stored.
    driver: str = "auto"
    #: The built-in tpcc driver's workload: ``tpcc-mysql`` (default: tpcc_start's statements,
    #: NOTPM comparable with tpcc-mysql) or ``batched`` (fewer round trips; not comparable).
    mode: Literal["tpcc-mysql", "batched"] | None = None
    #: The built-in tpcc driver's client library in tpcc-mysql mode: ``go`` (default: pure Go,
    #: needs nothing installed) or ``libmariadb`` (the C library tpcc_start links, through cgo:
    #: server-side prepared statements and one OS thread per connection, as tpcc_start does;
    #: docs/tpcc.md compares the two).
    client: Literal["go", "libmariadb"] | None = None
    #: sysbench test name (sysbench driver only).
    test: Literal["oltp_read_only", "oltp_point_select", "oltp_read_write"] | None = None
    connections: Annotated[int, Field(ge=1, le=100000)] = 16
    warmup: Seconds = 10.0
    #: Measured time after warmup (tpcc_start's -l); 30 minutes like the 2011 study.
    duration: Annotated[Seconds, Field(gt=0)] = 1800.0
    report_interval: Annotated[Seconds, Field(ge=1)] = 10.0
    #: Paths of external binaries (tpcc_start, tpcc_load, sysbench), when not on PATH.
    binaries: dict[str, str] = Field(default_factory=dict)
    #: A fixed rate for the Go tpcc driver (``tpcc run --rate``): New-Orders a minute across all
    #: connections, the transaction mix kept, each transaction's latency from its scheduled
    #: start (docs/tpcc.md, "Fixed rate"). None: the closed loop, every connection flat out.
    #: tpcc_start and sysbench cannot hold it; ``driver: auto`` picks the Go driver for it.
    rate: Annotated[float, Field(gt=0, le=RATE_MAX_NOTPM, allow_inf_nan=False)] | None = None
    #: How the rate's scheduled starts are spaced: ``uniform`` (default) or ``poisson``.
    arrivals: Literal["uniform", "poisson"] | None = None

    #: Why ``auto`` chose the driver (shown by ``validate``/``plan``); None when it was named.
    _driver_choice: str | None = PrivateAttr(default=None)

    @model_validator(mode="wrap")
    @classmethod
    def _resolve_auto(cls, data: Any, handler: Any) -> WorkloadSpec:
        from runner.workloads.registry import AUTO_DRIVER, resolve_driver

        choice = None
        if isinstance(data, dict) and data.get("driver", AUTO_DRIVER) == AUTO_DRIVER:
            binaries = data.get("binaries")
            choice = resolve_driver(binaries if isinstance(binaries, dict) else None,
                                    mode=data.get("mode"), rate=data.get("rate"))
            data = {**data, "driver": choice.driver}
        spec = handler(data)
        if choice is not None:
            spec._driver_choice = choice.reason
        return spec

    @property
    def driver_choice(self) -> str | None:
        """How ``driver: auto`` was resolved (a sentence), or None for a named driver."""
        return self._driver_choice

    @field_validator("driver")
    @classmethod
    def _known_driver(cls, value: str) -> str:
        _adapter(value)
        return value

    @model_validator(mode="after")
    def _driver_fits(self) -> WorkloadSpec:
        for message, loc in _adapter(self.driver).spec_problems(self):
            raise KeyedValueError(message, *loc)
        if self.report_interval > self.duration:
            raise KeyedValueError(
                "report_interval is longer than duration — shorten it", "report_interval"
            )
        return self


class SamplingSpec(StrictModel):
    """The sampler: SHOW GLOBAL STATUS, checkpoint age, /proc figures on absolute ticks."""

    enabled: bool = True
    interval: Annotated[Seconds, Field(ge=0.5)] = 10.0
    #: Keep the LOG section of SHOW ENGINE INNODB STATUS (compressed) with every sample.
    engine_status: bool = True


def _window_start(value: Any) -> Any:
    """``steady`` (any case: ``Steady`` means it too); anything else is a duration."""
    if value is None:
        return None
    if isinstance(value, str) and value.strip().lower() == "steady":
        return "steady"
    try:
        return _to_seconds(value)
    except ValueError as exc:
        # The keyword is the other valid answer here: name it where the durations are listed.
        raise ValueError(str(exc).replace(", got ", ", or `steady`, got ", 1)) from None


class WindowSpec(StrictModel):
    """The measurement window, in seconds after warmup ended. Default: the second half.

    ``start: steady`` starts each run's window where MSER-5 finds its warm-up transient over
    (throughput, checkpoint age, dirty pages; ``runner/run/steady.py``), at most at ``max_start``
    (default: half the duration, the fixed window's own start).
    """

    start: Annotated[float | Literal["steady"] | None, BeforeValidator(_window_start)] = None
    end: Seconds | None = None
    max_start: Seconds | None = None
    #: ``whole``: a run whose throughput cycles (a flush cycle, docs/statistics.md) has its
    #: window cut to the most whole cycles it holds, by the analysis; ``as-set``: the window as
    #: declared. Analysis only: it changes no run's measurement (nor the measurement hash).
    cycles: Literal["whole", "as-set"] = "whole"

    @property
    def steady(self) -> bool:
        """Whether each run's start is chosen by the steady-state rule."""
        return self.start == "steady"

    def resolve(self, duration: float) -> tuple[float, float]:
        """(start, end) in seconds after warmup, defaults filled from the run's duration.

        With ``start: steady`` the start is the latest a run's window may start (``max_start``):
        the one each run falls back to; the run's own start is recorded with it.
        """
        if self.steady:
            start = self.max_start if self.max_start is not None else duration / 2
        else:
            start = self.start if self.start is not None else duration / 2
        end = self.end if self.end is not None else duration
        return float(start), end

    @model_validator(mode="after")
    def _steady_keys(self) -> WindowSpec:
        if isinstance(self.start, float) and not 0 <= self.start <= MAX_DURATION_S:
            raise KeyedValueError(
                f"start {self.start:g}s is outside 0..{MAX_DURATION_S:g}s — give seconds"
                " after warmup, or `steady`", "start")
        if self.max_start is not None and not self.steady:
            raise KeyedValueError(
                "max_start caps the steady-state start only — write `start: steady`, or"
                " remove max_start", "max_start")
        return self


def _cpu_list(value: Any) -> Any:
    from runner.host.cpus import parse_cpu_list

    if value is None:
        return None
    try:
        parse_cpu_list(value)
    except ValueError as exc:
        raise ValueError(str(exc)) from None
    return str(value)


class CpusSpec(StrictModel):
    """CPU placement: pin mysqld and the driver to chosen CPUs (recorded with every run).

    On a small machine the driver and the server share cores; pinning them apart keeps the
    client from stealing the server's CPU by chance. CPU lists are ``0``, ``0-1``, ``1,3``.
    """

    mysqld: Annotated[str | None, BeforeValidator(_cpu_list)] = None
    driver: Annotated[str | None, BeforeValidator(_cpu_list)] = None
    #: ``affinity`` (sched_setaffinity via taskset) or ``cpuset`` (a cgroup cpuset).
    method: Literal["affinity", "cpuset"] = "affinity"


class OrderSpec(StrictModel):
    """Run order: as written, randomized with a seed, repetitions interleaved, or blocks.

    ``blocks``: block r runs every cell's r-th repetition once, in a fresh random order per
    block drawn from ``seed`` (stored with the experiment); the analysis treats the block as a
    stratum, so a slow drift of the machine over a night is not a difference between cells.
    """

    mode: Literal["as-written", "randomized", "interleaved", "blocks"] = "as-written"
    seed: int = 0


class DisturbedSpec(StrictModel):
    """What to do with a run the rest of the machine disturbed (``runner/run/disturbance.py``).

    ``keep``: warn only (the run counts); ``exclude``: keep it stored and shown, out of the
    verdicts; ``rerun``: exclude it and queue a replacement, at most ``max_reruns`` times per
    repetition (the last one is kept, excluded, when every attempt was disturbed).
    """

    action: Literal["keep", "exclude", "rerun"] = "keep"
    max_reruns: Annotated[int, Field(ge=0, le=10)] = 2


class PreRunSpec(StrictModel):
    """Steps before measuring each run."""

    #: ``echo 3 > /proc/sys/vm/drop_caches`` where permitted (a warning otherwise).
    drop_caches: bool = False
    #: Set max_dirty_pages_pct to 0 until fewer than ``drain_dirty_pages_below`` pages are dirty.
    drain_dirty_pages: bool = True
    drain_dirty_pages_below: Annotated[int, Field(ge=0)] = 100
    drain_timeout: Seconds = 300.0
    #: Upper bound of a random extra warm-up per run (the workload runs that much longer
    #: before its window), so repetitions sample different phases of a flush cycle. Unset:
    #: :data:`DEFAULT_START_JITTER_S` when the experiment repeats a cell, else none; ``0``:
    #: none. Each run's offset is drawn from ``order.seed`` and its run id (:func:`start_offset`).
    start_jitter: Seconds | None = None


#: The start jitter of an experiment that repeats a cell and does not set one: two minutes,
#: the longest flush cycle the committed studies show (MySQL 5.5 at its defaults, ≈ 120 s).
DEFAULT_START_JITTER_S = 120.0


def start_jitter(exp: ExperimentSpec) -> float:
    """The experiment's start-jitter bound in seconds (see :class:`PreRunSpec`)."""
    if exp.pre_run.start_jitter is not None:
        return float(exp.pre_run.start_jitter)
    repeats = max(exp.repetitions, exp.baseline_repetitions or 0)
    return DEFAULT_START_JITTER_S if repeats >= 2 else 0.0


def start_offset(exp: ExperimentSpec, run_id: int) -> float:
    """One run's extra warm-up: whole seconds drawn uniformly from 0 … the jitter bound, from
    the experiment's ``order.seed`` and the run's id — the same run always gets the same offset,
    a rerun (a new run id) a fresh one."""
    bound = start_jitter(exp)
    if bound <= 0:
        return 0.0
    return float(random.Random(f"start-jitter:{exp.order.seed}:{int(run_id)}")
                 .randint(0, int(bound)))


# The baseline's shapes are routed to one model each (discriminated unions), so a mistake gets
# that model's error alone — a misspelt knob its did-you-mean — not one error per member of a
# union; the "one-of:" tags are left out of the key paths errors name (core.validation).
#: One baseline: partial knob values naming a cell, or an include row's ``name``.
BaselineRef = Annotated[
    Annotated[Knobs, Tag("one-of:knobs")] | Annotated[RowName, Tag("one-of:name")],
    Discriminator(lambda v: "one-of:name" if isinstance(v, str) else "one-of:knobs"),
]
#: ``baseline:``: one of them, or a list (one baseline per server or group of rows).
Baselines = Annotated[
    Annotated[BaselineRef, Tag("one-of:one")] | Annotated[list[BaselineRef], Tag("one-of:list")],
    Discriminator(lambda v: "one-of:list" if isinstance(v, list) else "one-of:one"),
]


class ExperimentSpec(StrictModel):
    """A whole experiment file."""

    version: Literal[1]
    name: Annotated[str, Field(min_length=1, max_length=120, pattern=r"^[A-Za-z0-9][\w.-]*$")]
    description: str = ""
    #: Server profile name (``configs/servers/NAME.yaml``) or a path to a profile file.
    server: str = "mariadb-debian"
    #: Base my.cnf template name (``configs/mycnf/NAME.cnf``) or a path.
    base_config: str = "small"
    dataset: DatasetSpec
    workload: WorkloadSpec = Field(default_factory=WorkloadSpec)
    sampling: SamplingSpec = Field(default_factory=SamplingSpec)
    window: WindowSpec = Field(default_factory=WindowSpec)
    repetitions: Annotated[int, Field(ge=1, le=1000)] = 1
    #: Runs of the baseline cell, when it should run more often than the others: a baseline
    #: repeated at least 5 times is the experiment's own A/A noise floor (docs/statistics.md).
    baseline_repetitions: Annotated[int, Field(ge=1, le=1000)] | None = None
    order: OrderSpec = Field(default_factory=OrderSpec)
    #: The policy for disturbed runs (docs/statistics.md, "Disturbed runs").
    disturbed: DisturbedSpec = Field(default_factory=DisturbedSpec)
    pre_run: PreRunSpec = Field(default_factory=PreRunSpec)
    cpus: CpusSpec = Field(default_factory=CpusSpec)
    #: Knob values every cell shares (the matrix may not repeat them).
    fixed: Knobs = Field(default_factory=Knobs)
    matrix: Matrix = Field(default_factory=Matrix)
    #: Partial cells to drop from the product (a cell is dropped when all given knobs match).
    exclude: list[Knobs] = Field(default_factory=list)
    #: Whole extra cells to add (e.g. the walked list of the 2011 study); each may carry the
    #: published result it reproduces (``reference:``, runner/experiment/references.py).
    include: list[IncludeCell] = Field(default_factory=list)
    #: Partial knob values naming the baseline cell (default: the first cell), or an include
    #: row's ``name``, or a list of them: one baseline per server (or per group of rows), each
    #: row compared with its own (``analysis/comparisons/baselines.py``).
    baseline: Baselines | None = None
    #: Raw variables that open the server or name a path, allowed on purpose (README: "The
    #: sandbox owns its server"); paths must stay relative, inside the run's datadir.
    allow_variables: list[Annotated[str, BeforeValidator(_variable_name)]] = Field(
        default_factory=list
    )
    #: Refuse a matrix with more cells than this before expanding it (raise it on purpose).
    max_cells: Annotated[int, Field(ge=1)] = 10_000
    #: Host classes allowed to run it (``worker --host-class``); empty: any (issue 13).
    hosts: list[Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,127}$")]] = Field(
        default_factory=list)
    #: ``one``: all runs on one host class (the first to claim); ``spread``: hosts share it
    #: and the analysis treats the host as a block (issue 13, docs/hosts.md).
    placement: Literal["one", "spread"] = "one"
    #: The published study this one reproduces: its source and comparisons (the scorecard).
    reference: ReferenceSpec | None = None

    def resolved_window(self) -> dict[str, float]:
        """Run timing and the measurement window in seconds, defaults filled in.

        ``warmup``, ``duration``, ``report_interval``, and ``start``/``end`` of the window
        after warmup: what the queue stores so the analysis never re-derives it.
        """
        start, end = self.window.resolve(self.workload.duration)
        out = {"warmup": self.workload.warmup, "duration": self.workload.duration,
               "start": start, "end": end, "report_interval": self.workload.report_interval}
        if self.window.steady:
            out["steady"] = True  # each run's own start is runs.window_start_s
        # Read by the analysis (analysis/reading/window_cycles.py).
        out["cycles"] = self.window.cycles
        return out

    def cell_count(self) -> int:
        """Cells of the product plus include cells, counted without expanding anything."""
        return math.prod(len(levels) for levels in self.matrix.axes().values()) * bool(
            self.matrix.axes() or not self.include
        ) + len(self.include)

    def repetitions_of(self, cell: CellSpec) -> int:
        """How many times ``cell`` runs: its include row's own ``repetitions`` if set, else
        ``baseline_repetitions`` for the baseline (if set), else ``repetitions``."""
        if cell.repetitions is not None:
            return cell.repetitions
        if cell.is_baseline and self.baseline_repetitions is not None:
            return self.baseline_repetitions
        return self.repetitions

    def repetitions_label(self) -> str:
        """``3 repetitions``, or ``2 repetitions (baseline 5)`` when the baseline runs more."""
        text = f"{self.repetitions} repetitions"
        if self.baseline_repetitions is not None and self.baseline_repetitions != self.repetitions:
            text += f" (baseline {self.baseline_repetitions})"
        own = [inc.repetitions for inc in self.include if inc.repetitions is not None]
        if own:  # rows with their own count (a second baseline, e.g. one per server)
            counts = "/".join(str(n) for n in sorted(set(own)))
            text += f" ({len(own)} include row{'s' if len(own) > 1 else ''}: {counts})"
        return text

    def names_servers(self) -> bool:
        """Whether a cell names its own server (``server`` in fixed, matrix or include).

        Then every cell carries a ``server`` knob (the top-level ``server`` filled in where a
        cell names none), so the server is an ordinary knob column for the analysis.
        """
        return ("server" in self.fixed.values() or "server" in self.matrix.axes()
                or any(inc.server is not None for inc in self.include))

    def metric(self) -> dict[str, Any]:
        """The workload's primary metric (name, unit, what a count counts, per minute?)."""
        return dataclasses.asdict(_adapter(self.workload.driver).metric)

    @model_validator(mode="wrap")
    @classmethod
    def _rate_knob_picks_go(cls, data: Any, handler: Any) -> ExperimentSpec:
        """A ``rate`` knob (fixed, matrix or include) with ``driver: auto``: the Go driver,
        the only one that holds a rate (the workload's own ``rate`` resolves in
        :class:`WorkloadSpec`)."""
        from runner.workloads.registry import AUTO_DRIVER, resolve_driver

        choice = None
        workload = data.get("workload", {}) if isinstance(data, dict) else None
        if isinstance(workload, dict) and workload.get("driver", AUTO_DRIVER) == AUTO_DRIVER \
                and _rate_knob_path(data) is not None:
            binaries = workload.get("binaries")
            choice = resolve_driver(binaries if isinstance(binaries, dict) else None,
                                    mode=workload.get("mode"), rate=True)
            data = {**data, "workload": {**workload, "driver": choice.driver}}
        spec = handler(data)
        if choice is not None:
            spec.workload._driver_choice = choice.reason
        return spec

    @model_validator(mode="after")
    def _consistency(self) -> ExperimentSpec:
        kind = _adapter(self.workload.driver).dataset_kind
        if kind != self.dataset.workload:
            # Blame the side that was moved off the default: a sysbench dataset with the default
            # driver needs another driver; a sysbench driver on the default dataset needs data.
            if self.dataset.workload != DatasetSpec.model_fields["workload"].default:
                from runner.workloads.registry import adapters

                fits = [n for n, a in adapters().items() if a.dataset_kind == self.dataset.workload]
                raise KeyedValueError(
                    f"a {self.dataset.workload} dataset needs `workload.driver:"
                    f" {' or '.join(fits)}`", "workload", "driver"
                )
            raise KeyedValueError(
                f"the {self.workload.driver} driver needs a {kind} dataset"
                f" ({_SCALE_KEYS[kind]})", "dataset", "workload",
            )
        window_start, window_end = self.window.resolve(self.workload.duration)
        if not 0 <= window_start < window_end <= self.workload.duration:
            raise KeyedValueError(
                f"window {window_start:g}s..{window_end:g}s does not fit in the duration"
                f" ({self.workload.duration:g}s) — keep 0 <= start < end <= duration",
                "window",
            )
        length = window_end - window_start
        if self.workload.report_interval > length:
            raise KeyedValueError(
                f"report_interval {self.workload.report_interval:g}s is longer than the"
                f" measurement window ({length:g}s): no interval would be measured — shorten"
                " it or widen the window", "workload", "report_interval",
            )
        if self.sampling.enabled and self.sampling.interval > length:
            raise KeyedValueError(
                f"sampling interval {self.sampling.interval:g}s is longer than the measurement"
                f" window ({length:g}s): no sample would fall inside it — shorten it",
                "sampling", "interval",
            )
        cells = self.cell_count()
        if cells > self.max_cells:
            raise KeyedValueError(
                f"the matrix has {cells:,} cells (before exclude), more than max_cells"
                f" ({self.max_cells:,}) — shrink the matrix, or set max_cells if you mean it",
                "matrix",
            )
        if self.baseline_repetitions is not None and self.baseline_repetitions < self.repetitions:
            raise KeyedValueError(
                f"baseline_repetitions ({self.baseline_repetitions}) is below repetitions"
                f" ({self.repetitions}): the baseline would run less than every other cell —"
                " raise it, or remove it", "baseline_repetitions",
            )
        fixed = set(self.fixed.values())
        if "server" in fixed and "server" in self.model_fields_set:
            raise KeyedValueError(
                "the server is set both at the top (`server:`) and in `fixed.server` — keep"
                " one", "fixed", "server",
            )
        both = sorted(fixed & set(self.matrix.axes()))
        if both:
            raise KeyedValueError(
                f"{', '.join(both)} set in both `fixed` and `matrix` — keep one",
                "matrix",
                both[0],
            )
        self._rate_fits()
        check_references(self.include, self.reference, self.metric()["name"])
        return self

    def _rate_fits(self) -> None:
        """A ``rate`` knob needs the Go tpcc driver, and is the workload's rate in one place
        only."""
        where = _rate_knob_path(self.model_dump(include={"fixed", "matrix", "include"}))
        if where is None:
            if self.workload.arrivals is not None and self.workload.rate is None:
                raise KeyedValueError("`arrivals` spaces a fixed rate's starts — set `rate`"
                                      " (NOTPM) or remove `arrivals`", "workload", "arrivals")
            return
        if self.workload.driver != "tpcc":
            raise KeyedValueError(
                f"`rate` needs the Go tpcc driver: {self.workload.driver} runs a closed loop"
                " and cannot hold a fixed rate — use `workload.driver: tpcc` (or `auto`), or"
                " remove `rate`", *where)
        if self.workload.rate is not None:
            raise KeyedValueError(
                f"the rate is set both in `workload.rate` and in `{where[0]}` — keep one",
                *where)


def _rate_knob_path(data: Any) -> tuple[str | int, ...] | None:
    """Where a (raw or dumped) experiment sets the ``rate`` knob — ``("fixed", "rate")``,
    ``("matrix", "rate")`` or ``("include", i, "rate")`` — or None."""
    if not isinstance(data, dict):
        return None
    for section in ("fixed", "matrix"):
        knobs = data.get(section)
        if isinstance(knobs, dict) and knobs.get("rate") is not None:
            return (section, "rate")
    rows = data.get("include")
    for i, row in enumerate(rows if isinstance(rows, list) else []):
        if isinstance(row, dict) and row.get("rate") is not None:
            return ("include", i, "rate")
    return None


def no_empty_values(data: dict[str, Any]) -> None:
    """Refuse a knob, raw variable or axis written with no value in an experiment *file*.

    ``max_dirty_pages_pct:`` with nothing after it is YAML null, which the knob models read as
    "not set": an axis (or a fixed value) the user wrote would vanish silently. Checked on the
    file's raw data only: a stored (dumped) experiment has None for every unset knob.

    Raises
    ------
    KeyedValueError
        Naming the key path (``matrix.max_dirty_pages_pct``).
    """
    for section in ("fixed", "matrix"):
        _refuse_empty(data.get(section), (section,), axis=section == "matrix")
    if not isinstance(data.get("baseline"), list):
        _refuse_empty(data.get("baseline"), ("baseline",), axis=False)
    for section in ("include", "exclude", "baseline"):
        items = data.get(section)
        if isinstance(items, list):
            for i, item in enumerate(items):
                _refuse_empty(item, (section, i), axis=False)


def _refuse_empty(mapping: Any, loc: tuple[str | int, ...], *, axis: bool) -> None:
    """A knob (or raw variable) written with no value is an error naming its key."""
    if not isinstance(mapping, dict):
        return
    for key, value in mapping.items():
        if key == "variables" and isinstance(value, dict):
            _refuse_empty(value, (*loc, "variables"), axis=axis)
            continue
        if value is None:
            what = ("has no levels — list at least one, e.g. [60, 90], or remove the key"
                    if axis else "has no value — give one, or remove the key")
            raise KeyedValueError(what, *loc, str(key))
        if axis and isinstance(value, list):
            for i, level in enumerate(value):
                if level is None:
                    raise KeyedValueError("this level is empty — give a value or remove it",
                                          *loc, str(key), i)


class CellSpec(StrictModel):
    """One point of the matrix: its knob values and a stable id."""

    key: str
    position: int
    knobs: dict[str, Any]
    label: str
    is_baseline: bool = False
    #: The include row's own ``repetitions`` (None: the experiment's rule).
    repetitions: int | None = None

    def knob_model(self) -> Knobs:
        """The knob values as a :class:`Knobs` model (raw variables un-flattened)."""
        return Knobs.from_values(self.knobs)


def _canonical(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def cell_key(knobs: dict[str, Any]) -> str:
    """Stable id of a cell: hash of its knob values (order of keys does not matter)."""
    payload = json.dumps({k: _canonical(v) for k, v in knobs.items()}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:12]


def _format_value(name: str, value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if name in SIZE_KNOBS:
        return format_size(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, dict):  # e.g. a hand-written storage profile
        return "{" + ",".join(f"{k}={_format_value(k, v)}" for k, v in sorted(value.items())) + "}"
    return str(value)


def cell_label(knobs: dict[str, Any], varying: set[str] | None = None) -> str:
    """``doublewrite=off max_dirty_pages_pct=60`` — only the varying knobs when given."""
    parts = [
        f"{name}={_format_value(name, value)}"
        for name, value in knobs.items()
        if varying is None or name in varying
    ]
    return " ".join(parts) or "default"


def _matches(knobs: dict[str, Any], partial: dict[str, Any]) -> bool:
    return all(knobs.get(k) == v for k, v in partial.items())


def _with_server(exp: ExperimentSpec, fixed: dict[str, Any], knobs: dict[str, Any]
                 ) -> dict[str, Any]:
    """``knobs`` with the server filled in (``fixed.server``, else the top-level ``server``)
    when the experiment names servers per cell (:meth:`ExperimentSpec.names_servers`)."""
    if not exp.names_servers() or "server" in knobs:
        return knobs
    return {"server": fixed.get("server", exp.server), **knobs}


def _server_first(knobs: dict[str, Any]) -> dict[str, Any]:
    """The server leads the label (``server=mysql-5.5 doublewrite=off``)."""
    if "server" not in knobs:
        return knobs
    return {"server": knobs["server"], **{k: v for k, v in knobs.items() if k != "server"}}


def cell_server(exp: ExperimentSpec, cell: CellSpec) -> str:
    """The server profile (name or path, as written) that runs ``cell``."""
    return str(cell.knobs.get("server", exp.server))


def expand(exp: ExperimentSpec, source: str = "<experiment>") -> list[CellSpec]:
    """Expand the matrix into cells — a pure function of the experiment.

    Cartesian product of the matrix axes, minus ``exclude`` matches, plus ``include`` cells,
    each merged over ``fixed``. Raises :class:`ConfigError` for an empty result, duplicate
    cells, or a baseline that does not name exactly one cell.
    """
    fixed = exp.fixed.values()
    axes = exp.matrix.axes()
    names = list(axes)
    product = [_with_server(exp, fixed, dict(zip(names, combo, strict=True)))
               for combo in itertools.product(*axes.values())]
    if not axes and exp.include:
        product = []  # a pure list of cells (the 2011 walk): no implicit empty cell
    excludes = [e.values() for e in exp.exclude]
    for i, partial in enumerate(excludes):
        if not any(_matches(p, partial) for p in product):
            raise ConfigError(
                f"exclude[{i}] ({cell_label(partial)}) matches no cell",
                where=f"{source}: exclude[{i}]",
                fix="check the knob names and levels against the matrix",
            )
    cells_knobs = [p for p in product if not any(_matches(p, e) for e in excludes)]
    # Cells from the matrix come first, then the include cells (their positions follow).
    n_matrix = len(cells_knobs)
    cells_knobs += [_with_server(exp, fixed, inc.values()) for inc in exp.include]
    if not cells_knobs:
        raise ConfigError(
            "the matrix is empty after `exclude`",
            where=f"{source}: exclude",
            fix="remove an exclude rule or add levels to the matrix",
        )

    merged = [_server_first({**fixed, **k}) for k in cells_knobs]
    # Re-validate every merged cell: cross-knob rules (io_capacity <= io_capacity_max) must
    # hold for each combination, not only for each axis.
    for i, knobs in enumerate(merged):
        where = f"{source}: include[{i - n_matrix}]" if i >= n_matrix else f"{source}: matrix"
        try:
            CellSpec(key="x", position=0, knobs=knobs, label="x").knob_model()
        except ValidationError as exc:
            problem = exc.errors()[0]["msg"].removeprefix("Value error, ")
            raise ConfigError(
                f"cell {cell_label(knobs)}: {problem}", where=where, fix=None
            ) from None

    names_seen = {n for m in merged for n in m}
    varying = {k for k in names_seen if len({repr(m.get(k)) for m in merged}) > 1}
    seen: dict[str, int] = {}
    cells = []
    for position, knobs in enumerate(merged):
        key = cell_key(knobs)
        if key in seen:
            raise ConfigError(
                f"duplicate cell {cell_label(knobs)} (also cell #{seen[key] + 1})",
                where=(
                    f"{source}: include[{position - n_matrix}]"
                    if position >= n_matrix
                    else f"{source}: matrix"
                ),
                fix="remove the repeated cell; use `repetitions` to run a cell more than once",
            )
        seen[key] = position
        cells.append(
            CellSpec(key=key, position=position, knobs=knobs,
                     label=cell_label(knobs, varying or None),
                     repetitions=(exp.include[position - n_matrix].repetitions
                                  if position >= n_matrix else None))
        )
    return _mark_baseline(exp, cells, source)


def baselines(exp: ExperimentSpec) -> list[Knobs | str]:
    """The experiment's baselines as a list (one, or one per server or group of rows): knob
    values, or an include row's name."""
    if exp.baseline is None:
        return []
    return list(exp.baseline) if isinstance(exp.baseline, list) else [exp.baseline]


def _mark_baseline(exp: ExperimentSpec, cells: list[CellSpec], source: str) -> list[CellSpec]:
    wanted_all = baselines(exp)
    if not wanted_all:
        chosen = {0}
    else:
        chosen = set()
        listed = isinstance(exp.baseline, list)
        # Include rows follow the matrix's cells, in order (expand refuses duplicates).
        n_matrix = len(cells) - len(exp.include)
        row_names = {row_name(inc): i for i, inc in enumerate(exp.include) if row_name(inc)}
        for i, partial in enumerate(wanted_all):
            where = f"{source}: baseline" + (f"[{i}]" if listed else "")
            if isinstance(partial, str):
                if partial not in row_names:
                    known = ", ".join(sorted(row_names)) or "none: give include rows `name: …`"
                    raise ConfigError(f"no include row is named {partial!r} (row names:"
                                      f" {known})", where=where,
                                      fix="name a row of `include`, or give knob values")
                hits, shown = [n_matrix + row_names[partial]], partial
            else:
                wanted = partial.values()
                shown = cell_label(wanted)
                hits = [j for j, c in enumerate(cells) if _matches(c.knobs, wanted)]
            if len(hits) != 1:
                raise ConfigError(
                    f"baseline ({shown}) matches {len(hits)} cells, it must match one",
                    where=where, fix="give enough knob values to name exactly one cell, or"
                    " name an include row (`name:` on the row, `baseline: NAME`)")
            if hits[0] in chosen:
                raise ConfigError(f"baseline ({shown}) names a cell an earlier"
                                  " baseline names too", where=where,
                                  fix="name each baseline cell once")
            chosen.add(hits[0])
    return [c.model_copy(update={"is_baseline": i in chosen}) for i, c in enumerate(cells)]


def run_order(exp: ExperimentSpec, cells: list[CellSpec]) -> list[tuple[CellSpec, int]]:
    """(cell, repetition) pairs in the declared order; repetitions count from 1.

    Interleaved: round r runs every cell that has an r-th repetition, so a baseline with more
    ``baseline_repetitions`` runs its extra rounds last (after every cell has its own runs).
    Blocks: the same rounds, each shuffled afresh (``random.Random(seed)``, one stream).
    """
    counts = {c.key: exp.repetitions_of(c) for c in cells}
    if exp.order.mode in ("interleaved", "blocks"):
        rounds = range(1, max(counts.values(), default=0) + 1)
        blocks = [[(c, r) for c in cells if r <= counts[c.key]] for r in rounds]
        if exp.order.mode == "blocks":
            rng = random.Random(exp.order.seed)
            for block in blocks:  # a fresh order per block, one seeded stream for all
                rng.shuffle(block)
        return [pair for block in blocks for pair in block]
    pairs = [(c, r) for c in cells for r in range(1, counts[c.key] + 1)]
    if exp.order.mode == "randomized":
        random.Random(exp.order.seed).shuffle(pairs)
    return pairs


#: Keys of the experiment that do not change what a single run measures.
_PLAN_ONLY_KEYS = (
    "description",
    "hosts",
    "placement",
    "matrix",
    "exclude",
    "include",
    "baseline",
    "repetitions",
    "baseline_repetitions",
    "order",
    "reference",
    "disturbed",
)
#: Keys of sections that do not change what a single run measures: the start jitter is a
#: random draw per run, like the run order (each run records its own offset).
_PLAN_ONLY_SUBKEYS = (("pre_run", "start_jitter"), ("window", "cycles"))


def measurement_hash(exp: ExperimentSpec, files: Mapping[str, Any] | None = None) -> str:
    """Hash of the parts of an experiment that shape each run's measurement.

    Two files that differ only in the matrix, repetitions or order share it: their runs are
    comparable, and re-queuing an edited matrix reuses the finished cells. ``files`` (the base
    config's text and the server profile, as queued) count too: an edited base config is a
    different measurement.
    """
    data = exp.model_dump(mode="json")
    for key in _PLAN_ONLY_KEYS:
        data.pop(key, None)
    for section, key in _PLAN_ONLY_SUBKEYS:
        data.get(section, {}).pop(key, None)
    if data.get("window", {}).get("max_start") is None:
        # Added after experiments were stored: unset, it must not change their hash.
        data.get("window", {}).pop("max_start", None)
    if data.get("fixed", {}).get("server") is None:
        # The server knob came after experiments were stored: unset, it keeps their hash.
        data.get("fixed", {}).pop("server", None)
    for key in ("client", "rate", "arrivals"):
        if data.get("workload", {}).get(key) is None:
            # So did the tpcc driver's client and fixed rate: unset, they keep their hash.
            data.get("workload", {}).pop(key, None)
    for knob in ("rate", "change_buffering"):
        if data.get("fixed", {}).get(knob) is None:
            # And the rate and change buffering knobs: unset, they keep their hash.
            data.get("fixed", {}).pop(knob, None)
    if files:
        data["_files"] = files
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def spec_hash(exp: ExperimentSpec) -> str:
    """Hash of the whole validated experiment (not of the file's formatting or comments)."""
    payload = json.dumps(exp.model_dump(mode="json"), sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()


def load_experiment(path: str | Path) -> ExperimentSpec:
    """Read and validate an experiment file; errors name the file and key path.

    Besides the model's rules, a *file* may not say what would do nothing or contradict itself
    (:func:`pointless_settings`, :func:`runner.experiment.references.check_claims`); a stored
    experiment is not held to these, so a study queued before they existed stays readable.
    """
    path = Path(path)
    exp = load_versioned(path, ExperimentSpec, "experiment", raw_check=_file_rules)
    try:
        pointless_settings(exp, path.parent)
        start, end = exp.window.resolve(exp.workload.duration)
        check_claims(exp.include, exp.reference, report_interval=exp.workload.report_interval,
                     window=end - start)
    except KeyedValueError as exc:
        raise ConfigError(str(exc), where=f"{path}: {format_loc(exc.loc)}") from None
    return exp


def pointless_settings(exp: ExperimentSpec, folder: Path | None = None) -> None:
    """Refuse settings an experiment file states that would do nothing (the user meant
    something else): ``max_reruns`` without ``action: rerun``, a ``seed`` neither the order
    mode nor a start offset draws from, ``blocks``/``interleaved`` when every cell runs once
    (one round), and one server profile written two ways (two cells running the same server).

    ``folder``: the experiment file's folder (relative profile paths are read against it).

    Raises
    ------
    KeyedValueError
        Naming the key path (``disturbed.max_reruns``, ``matrix.server[1]``), with the fix.
    """
    disturbed = exp.disturbed
    if "max_reruns" in disturbed.model_fields_set and disturbed.action != "rerun":
        raise KeyedValueError(
            f"max_reruns counts the reruns of `action: rerun`, and the action is"
            f" {disturbed.action}: it would do nothing — remove max_reruns, or set"
            " `action: rerun`", "disturbed", "max_reruns")
    order = exp.order
    # The seed also draws each run's start offset (pre_run.start_jitter, start_offset()).
    if "seed" in order.model_fields_set and order.mode not in ("randomized", "blocks") \
            and start_jitter(exp) == 0:
        raise KeyedValueError(
            f"the seed draws the order of `mode: randomized` or `mode: blocks` and the start"
            f" offsets of pre_run.start_jitter; the mode is {order.mode} and no run has a start"
            " offset: it would do nothing — remove seed, or set the mode", "order", "seed")
    rounds = max([exp.repetitions, exp.baseline_repetitions or 1,
                  *(inc.repetitions or 1 for inc in exp.include)])
    if order.mode in ("blocks", "interleaved") and rounds == 1:
        same = "`mode: randomized` with the same seed" if order.mode == "blocks" \
            else "the order as written"
        raise KeyedValueError(
            f"every cell runs once, so `mode: {order.mode}` has one round, which is {same}"
            f" — write that, or raise repetitions", "order", "mode")
    _one_spelling_per_server(exp, folder)


def _one_spelling_per_server(exp: ExperimentSpec, folder: Path | None) -> None:
    """Two spellings of one server profile (``mariadb-debian`` and
    ``configs/servers/mariadb-debian.yaml``) make two cells that run the same server."""
    from core.paths import SERVER_PROFILES_DIR, named_file

    written: list[tuple[tuple[str | int, ...], str]] = []
    if "server" in exp.model_fields_set:
        written.append((("server",), exp.server))
    if exp.fixed.values().get("server") is not None:
        written.append((("fixed", "server"), str(exp.fixed.values()["server"])))
    for i, level in enumerate(exp.matrix.axes().get("server", [])):
        written.append((("matrix", "server", i), str(level)))
    for i, inc in enumerate(exp.include):
        if inc.server is not None:
            written.append((("include", i, "server"), str(inc.server)))
    seen: dict[Path, tuple[tuple[str | int, ...], str]] = {}
    for loc, value in written:
        try:
            profile = named_file(value, SERVER_PROFILES_DIR, (".yaml", ".yml"),
                                 folder).resolve()
        except (OSError, RuntimeError):  # a link loop: the profile check says so later
            continue
        first = seen.setdefault(profile, (loc, value))
        if first[1] != value:
            # The same words as preflight's check of a stored experiment (_spelt_twice).
            raise KeyedValueError(
                f"{value!r} and {first[1]!r} ({format_loc(first[0])}) are one server profile"
                f" ({profile}), spelt two ways: its cells would be measured twice as two"
                f" servers — write it one way (e.g. {first[1]!r}) everywhere the experiment"
                " names it", *loc)


def _file_rules(data: dict[str, Any]) -> None:
    """What the file itself may say: no key without a value, no URL with credentials."""
    no_empty_values(data)
    no_credentials(data)
