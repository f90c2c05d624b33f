"""The sections of an experiment file: the dataset, the workload driver, sampling, the
measurement window, CPU placement, run order, disturbed runs and the pre-run steps.

Each is a typed model validated for type, range and the facts of the driver it names
(:mod:`core.experiment.drivers`); the whole file is :class:`core.experiment.spec.ExperimentSpec`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BeforeValidator,
    Discriminator,
    Field,
    PrivateAttr,
    Tag,
    field_validator,
    model_validator,
)

from core.cpu_list import parse_cpu_list
from core.errors import ConfigError
from core.experiment.drivers import AUTO_DRIVER, DriverDef, choose_auto, driver_def, spec_problems
from core.experiment.rate_search import RateSearch
from core.units import parse_duration
from core.validation import KeyedValueError, StrictModel


def known_driver(name: str) -> DriverDef:
    """The driver table's entry for ``name`` (a ValueError with a did-you-mean if none)."""
    try:
        return driver_def(name)
    except ConfigError as exc:
        raise ValueError(f"{exc.what} — {exc.fix}") from None


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


#: ``workload.rate``: a number (a fixed rate) or a mapping (a rate search); the "one-of:"
#: tags are left out of the key paths errors name (core.validation).
FixedOrSearch = Annotated[
    Annotated[Annotated[float, Field(gt=0, le=RATE_MAX_NOTPM, allow_inf_nan=False)],
              Tag("one-of:number")]
    | Annotated[RateSearch, Tag("one-of:search")],
    Discriminator(lambda v: "one-of:search" if isinstance(v, dict | RateSearch)
                  else "one-of:number"),
]

#: The keys that give a dataset kind its scale (for messages).
SCALE_KEYS = {"tpcc": "warehouses", "sysbench": "tables/table_size"}


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
            known_driver(value)
        return value

    @model_validator(mode="after")
    def _scale(self) -> DatasetSpec:
        loader = known_driver(self.effective_loader)
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

    #: A driver of the driver table (``core/experiment/drivers.py``): tpcc, tpcc-mysql, sysbench,
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
    #: ``{max_under: {p99: 200ms, start: 1000, step: 500}}`` searches the highest rate held
    #: under a target instead, one run per rate tried (:mod:`core.experiment.rate_search`).
    rate: FixedOrSearch | None = None
    #: How the rate's scheduled starts are spaced: ``uniform`` (default) or ``poisson``.
    arrivals: Literal["uniform", "poisson"] | None = None

    #: Why ``auto`` chose the driver (shown by ``validate``/``plan``); None when it was named.
    _driver_choice: str | None = PrivateAttr(default=None)

    @model_validator(mode="wrap")
    @classmethod
    def _resolve_auto(cls, data: Any, handler: Any) -> WorkloadSpec:
        choice = None
        if isinstance(data, dict) and data.get("driver", AUTO_DRIVER) == AUTO_DRIVER:
            binaries = data.get("binaries")
            choice = choose_auto(binaries if isinstance(binaries, dict) else None,
                                 mode=data.get("mode"), rate=data.get("rate"))
            data = {**data, "driver": choice.driver}
        spec = handler(data)
        if choice is not None:
            spec._driver_choice = choice.reason
        return spec

    @property
    def rate_search(self) -> RateSearch | None:
        """The rate search (``rate: {max_under: …}``), or None for a fixed rate or none."""
        return self.rate if isinstance(self.rate, RateSearch) else None

    @property
    def driver_choice(self) -> str | None:
        """How ``driver: auto`` was resolved (a sentence), or None for a named driver."""
        return self._driver_choice

    @field_validator("driver")
    @classmethod
    def _known_driver(cls, value: str) -> str:
        known_driver(value)
        return value

    @model_validator(mode="after")
    def _driver_fits(self) -> WorkloadSpec:
        for message, loc in spec_problems(known_driver(self.driver), self):
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
