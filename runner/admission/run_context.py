"""What every run of one experiment shares: the prepared context, and whom a run tells.

:func:`prepare` (an experiment file: ``flushbench run``, ``queue add``) and
:func:`prepare_stored` (what the queue stored: ``flushbench worker``) both end in
:func:`prepare_experiment`: preflight the cells on this host (a file's cells expanded there, a
queued record's as it holds them, with the files it was queued with — nothing is written).
The dataset each server's runs start from is loaded (or its snapshot reused) once per context
by :func:`ensure_experiment_dataset`. Nothing here starts a measurement.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from core.experiment.cells import expand
from core.experiment.loading import load_experiment
from core.experiment.queued import QueuedExperiment
from core.experiment.spec import CellSpec, ExperimentSpec
from core.paths import work_dir
from runner.admission.preflight import PreflightReport, preflight
from runner.admission.queue_record import load_queued
from runner.connection import ConnectionInfo
from runner.datasets import DatasetKey, Snapshot, ensure_dataset
from runner.server import ResolvedServer
from runner.workloads import adapter_class, get_workload
from store.db import ResultsDB


class Reporter(Protocol):
    """What the CLI's live display is told (all methods optional in spirit: no-ops are fine)."""

    def run_started(
        self, index: int, total: int, cell: CellSpec, repetition: int, run_id: int
    ) -> None: ...
    def phase(self, text: str) -> None: ...
    def interval(self, record: Any) -> None: ...
    def sample(self, record: Any) -> None: ...
    def run_finished(self, run_id: int, status: str, error: str | None) -> None: ...


class NullReporter:
    """A reporter that says nothing (library use, tests)."""

    def run_started(self, *a: Any, **k: Any) -> None: ...
    def phase(self, *a: Any, **k: Any) -> None: ...
    def interval(self, *a: Any, **k: Any) -> None: ...
    def sample(self, *a: Any, **k: Any) -> None: ...
    def run_finished(self, *a: Any, **k: Any) -> None: ...


@dataclass
class ExperimentContext:
    """Everything a run needs that is the same for every run of the experiment."""

    exp: ExperimentSpec
    source: str
    cells: list[CellSpec]
    report: PreflightReport
    work: Path
    #: The loaded dataset of each server the cells use (by profile name as written): a
    #: datadir is only opened by the server build that wrote it.
    snapshots: dict[str, Snapshot] = field(default_factory=dict)
    cells_by_key: dict[str, CellSpec] = field(default_factory=dict)
    #: Keep every run's datadir (``--keep-datadirs``); by default only failed ones, capped.
    keep_datadirs: bool = False
    #: The base config and server profile as queued (:meth:`PreflightReport.queued_files`).
    files: dict[str, Any] = field(default_factory=dict)

    @property
    def server(self) -> ResolvedServer:
        """The first cell's resolved server binary (flavor, version, paths)."""
        return self.report.server

    def server_of(self, cell: CellSpec) -> ResolvedServer:
        """The server binary that runs ``cell`` (its ``server`` knob, else the default)."""
        return self.report.server_of(cell)

    def queued(self) -> QueuedExperiment:
        """What ``queue add`` stores for this context and a worker replays."""
        return self.report.queued(files=self.files)


def prepare(path: str | Path, work: Path | None = None, *,
            keep_datadirs: bool = False) -> ExperimentContext:
    """Load, expand and preflight an experiment file — nothing is started or written."""
    return prepare_experiment(load_experiment(path), str(path), work,
                              keep_datadirs=keep_datadirs)


def prepare_experiment(
    exp: ExperimentSpec,
    source: str,
    work: Path | None = None,
    stored: dict[str, dict] | None = None,
    *,
    keep_datadirs: bool = False,
    cells: list[CellSpec] | None = None,
    queued_files: dict[str, Any] | None = None,
) -> ExperimentContext:
    """Preflight an already validated experiment: its ``cells`` (expanded here when not
    given); ``stored`` and ``queued_files``: see :func:`runner.admission.preflight.preflight`.
    """
    cells = cells if cells is not None else expand(exp, source)
    report = preflight(exp, source, cells, work_dir=work or work_dir(), stored=stored,
                       keep_datadirs=keep_datadirs, queued_files=queued_files)
    return ExperimentContext(
        exp=exp,
        source=source,
        cells=cells,
        report=report,
        work=(work or work_dir()),
        cells_by_key={c.key: c for c in cells},
        keep_datadirs=keep_datadirs,
        files=dict(queued_files) if queued_files is not None else report.queued_files(),
    )


def prepare_stored(
    db: ResultsDB, experiment_id: int, work: Path | None = None, *, keep_datadirs: bool = False
) -> ExperimentContext:
    """The context of a queued experiment, from what the queue stored — not from files.

    The record (:func:`runner.admission.queue_record.load_queued`: the spec validated again,
    its cells expanded once) is preflighted as it is: the servers resolved from its profiles
    and the base config read from its text, nothing written to disk; each cell runs the
    translation stored at ``queue add`` when this host's binary is the one it was checked
    against, and the host checks run here either way.
    """
    queued = load_queued(db, experiment_id)
    return prepare_experiment(queued.exp, queued.source, work, queued.translations,
                              keep_datadirs=keep_datadirs, cells=queued.cells,
                              queued_files=queued.files)


def dataset_key(ctx: ExperimentContext, server_name: str | None = None) -> DatasetKey:
    """The dataset a run on server ``server_name`` (default: the first cell's) starts from:
    workload, scale, server flavor+version+build, page size. A datadir written by one server
    is not opened by another (MariaDB 10.11's redo and system tables mean nothing to MySQL
    5.5), so every server of an experiment has its own."""
    server = ctx.report.servers.get(server_name or "", ctx.server)
    options = ctx.report.option_lists.get(server_name or "", ctx.report.options)
    loader = ctx.exp.dataset.effective_loader
    page_size = str(ctx.report.page_size_for(options))
    # "10.11.19" keeps directory names readable; the hash of the full --version line (and the
    # binary's path) keeps two builds of the same version apart.
    build = hashlib.sha256(f"{server.mysqld}|{server.version_string}".encode()).hexdigest()[:8]
    return DatasetKey(
        workload="+".join(filter(None, (loader, adapter_class(loader).dataset_format))),
        scale_label=ctx.exp.dataset.scale_label(),
        flavor=server.flavor,
        version_string=".".join(str(v) for v in server.version) + "+" + build,
        page_size=page_size,
    )


def ensure_experiment_dataset(ctx: ExperimentContext, reporter: Reporter) -> None:
    """Load the dataset once per server (or reuse its snapshot); keep them on the context."""
    workload = get_workload(ctx.exp.dataset.effective_loader, ctx.exp.workload.binaries)
    log_dir = ctx.work / "datasets" / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    for name, server in ctx.report.servers.items():
        key = dataset_key(ctx, name)

        def loader(conn: ConnectionInfo, key: DatasetKey = key) -> None:
            reporter.phase(f"loading dataset {key.dirname()}")
            workload.load(conn, ctx.exp.dataset, log_dir / f"{key.dirname()}.log")

        reporter.phase(f"checking dataset snapshot ({name})")
        ctx.snapshots[name] = ensure_dataset(key, server, ctx.report.base_cnf_text, loader,
                                             ctx.work)
