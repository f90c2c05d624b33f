"""The experiment file as one typed model (``version: 1``), and the cell it expands into.

An experiment file declares *what* to measure; nothing here touches a server. Knob values are
validated for type and range here; whether the chosen server has the variable (and its real
range) is checked later by :mod:`runner.admission.preflight` against the binary's option list.
The sections are :mod:`core.experiment.sections`; expanding the matrix into cells is
:mod:`core.experiment.cells`; reading a file is :mod:`core.experiment.loading`.
"""

from __future__ import annotations

import dataclasses
import math
import random
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Discriminator, Field, Tag, model_validator

from core.experiment.drivers import AUTO_DRIVER, DRIVERS, choose_auto
from core.experiment.knobs import Knobs, Matrix, check_variable_name
from core.experiment.references import IncludeCell, ReferenceSpec, RowName, check_references
from core.experiment.sections import (
    DEFAULT_START_JITTER_S,
    SCALE_KEYS,
    CpusSpec,
    DatasetSpec,
    DisturbedSpec,
    OrderSpec,
    PreRunSpec,
    SamplingSpec,
    WindowSpec,
    WorkloadSpec,
    known_driver,
)
from core.validation import KeyedValueError, StrictModel


def _variable_name(value: Any) -> Any:
    return check_variable_name(value) if isinstance(value, str) else value



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
    #: published result it reproduces (``reference:``, core/experiment/references.py).
    include: list[IncludeCell] = Field(default_factory=list)
    #: Partial knob values naming the baseline cell (default: the first cell), or an include
    #: row's ``name``, or a list of them: one baseline per server (or per group of rows), each
    #: row compared with its own (``analysis/reading/baselines.py``).
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
        # read by the analysis (analysis/reading/window_cycles.py)
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
        """``3 repetitions``, or ``2 repetitions (baseline 5)`` when the baseline runs more; a
        rate search's cells run once a step: ``a rate search (1 run a step)``."""
        if self.workload.rate_search is not None:
            return "a rate search (1 run a step)"
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
        return dataclasses.asdict(known_driver(self.workload.driver).metric)

    @model_validator(mode="wrap")
    @classmethod
    def _rate_knob_picks_go(cls, data: Any, handler: Any) -> ExperimentSpec:
        """A ``rate`` knob (fixed, matrix or include) with ``driver: auto``: the Go driver,
        the only one that holds a rate (the workload's own ``rate`` resolves in
        :class:`WorkloadSpec`)."""
        choice = None
        workload = data.get("workload", {}) if isinstance(data, dict) else None
        if isinstance(workload, dict) and workload.get("driver", AUTO_DRIVER) == AUTO_DRIVER \
                and _rate_knob_path(data) is not None:
            binaries = workload.get("binaries")
            choice = choose_auto(binaries if isinstance(binaries, dict) else None,
                                 mode=workload.get("mode"), rate=True)
            data = {**data, "workload": {**workload, "driver": choice.driver}}
        spec = handler(data)
        if choice is not None:
            spec.workload._driver_choice = choice.reason
        return spec

    @model_validator(mode="after")
    def _consistency(self) -> ExperimentSpec:
        kind = known_driver(self.workload.driver).dataset_kind
        if kind != self.dataset.workload:
            # Blame the side that was moved off the default: a sysbench dataset with the default
            # driver needs another driver; a sysbench driver on the default dataset needs data.
            if self.dataset.workload != DatasetSpec.model_fields["workload"].default:
                fits = [d.name for d in DRIVERS if d.dataset_kind == self.dataset.workload]
                raise KeyedValueError(
                    f"a {self.dataset.workload} dataset needs `workload.driver:"
                    f" {' or '.join(fits)}`", "workload", "driver"
                )
            raise KeyedValueError(
                f"the {self.workload.driver} driver needs a {kind} dataset"
                f" ({SCALE_KEYS[kind]})", "dataset", "workload",
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
        if self.workload.rate_search is not None:
            self._search_fits(where)
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

    def _search_fits(self, where: tuple[str | int, ...] | None) -> None:
        """A rate search (``workload.rate: {max_under: …}``) picks each step's rate itself,
        one run per step: no ``rate`` knob beside it, and one search per cell."""
        if where is not None:
            raise KeyedValueError(
                f"`{where[0]}` sets `rate` while `workload.rate` searches it (max_under) — a"
                " search picks each step's rate itself: remove the `rate` knob, or write"
                " `workload.rate` as a number", *where)
        reps = [("repetitions", self.repetitions),
                ("baseline_repetitions", self.baseline_repetitions or 1)]
        reps += [(("include", i, "repetitions"), row.repetitions or 1)
                 for i, row in enumerate(self.include)]
        for key, count in reps:
            if count > 1:
                path = key if isinstance(key, tuple) else (key,)
                raise KeyedValueError(
                    f"a rate search (workload.rate.max_under) measures each cell once, one"
                    f" run per rate tried — set `{path[-1]}: 1` (repeat a rate by searching"
                    " again, or measure the rates found as fixed rates with repetitions)",
                    *path)


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



class CellSpec(StrictModel):
    """One point of the matrix: its knob values and a stable id."""

    key: str
    position: int
    knobs: dict[str, Any]
    label: str
    is_baseline: bool = False
    #: The include row's own ``repetitions`` (None: the experiment's rule).
    repetitions: int | None = None
    #: The include row's name (its ``name``, else its reference's); None for a matrix cell
    #: or an unnamed row.
    name: str | None = None

    def knob_model(self) -> Knobs:
        """The knob values as a :class:`Knobs` model (raw variables un-flattened)."""
        return Knobs.from_values(self.knobs)
