"""Run an experiment: preflight once, then for each queued run restore → start → verify → warm
up → measure → stop → record. A failing run is recorded with its evidence and the queue goes on.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from sqlalchemy import func, select

from flushbench.clock import as_utc
from flushbench.errors import FlushbenchError, ServerError, StoreError, WorkloadError
from flushbench.paths import work_dir
from runner import queue
from runner.connection import ConnectionInfo
from runner.datasets import DatasetError, DatasetKey, Snapshot, ensure_dataset, restore
from runner.disk import dispose_datadir
from runner.host.cgroups import reap_stale_groups
from runner.host.clock import ClockWatch, pause_warning
from runner.host.controls import RunHostControls
from runner.host.proof import IoCounters
from runner.host.thp import restore_leftover_thp, thp_setting
from runner.identity import Identity, local_identity
from runner.lease import Heartbeat, LeaseLost
from runner.metadata import host_facts
from runner.preflight import PreflightReport, preflight, stored_translation
from runner.recorder import RunRecorder, retrying
from runner.run_checks import apply_policy, record_checks
from runner.sampler import Sampler
from runner.server import (
    MysqldSandbox,
    ResolvedServer,
    SandboxLayout,
    drain_dirty_pages,
    write_mycnf,
)
from runner.spec import CellSpec, ExperimentSpec, expand, load_experiment, measurement_hash
from runner.worker import WorkerOptions, kill_leftover_servers, serve
from runner.workloads import adapter_class, get_workload
from store.db import ResultsDB
from store.models import ENDED_WITHOUT_RESULT, Cell, Experiment, Run, RunStatus

#: A driver silent for 3 report intervals (plus slack for connecting) is called hung.
WATCHDOG_INTERVALS = 3
WATCHDOG_SLACK_S = 30.0
#: How long a finished run waits for the results database to write its buffered rows and its
#: status (at least one lease): a database restart must not cost a finished measurement.
FINAL_WRITE_PATIENCE_S = 60.0


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
    #: The base config and server profile as queued (:func:`stored_files`).
    files: dict[str, Any] = field(default_factory=dict)

    @property
    def server(self) -> ResolvedServer:
        """The first cell's resolved server binary (flavor, version, paths)."""
        return self.report.server

    def server_of(self, cell: CellSpec) -> ResolvedServer:
        """The server binary that runs ``cell`` (its ``server`` knob, else the default)."""
        return self.report.server_of(cell)


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
    profile_files: dict[str, Path] | None = None,
) -> ExperimentContext:
    """Expand and preflight an already validated experiment (``stored``, ``profile_files``:
    see :func:`runner.preflight.preflight`)."""
    cells = expand(exp, source)
    report = preflight(exp, source, cells, work_dir=work or work_dir(), stored=stored,
                       keep_datadirs=keep_datadirs, profile_files=profile_files)
    return ExperimentContext(
        exp=exp,
        source=source,
        cells=cells,
        report=report,
        work=(work or work_dir()),
        cells_by_key={c.key: c for c in cells},
        keep_datadirs=keep_datadirs,
        files=stored_files(report),
    )


def prepare_stored(
    db: ResultsDB, experiment_id: int, work: Path | None = None, *, keep_datadirs: bool = False
) -> ExperimentContext:
    """The context of a queued experiment, from what the queue stored — not from files.

    The spec is validated again (cheap, and a newer flushbench may read an older row), the
    cells are expanded, and each cell runs the translation stored at ``queue add`` when this
    host's binary is the one it was checked against; host checks run here either way.
    """
    with db.session() as s:
        row = s.get(Experiment, experiment_id)
        if row is None:
            raise StoreError(f"no experiment {experiment_id}", where="experiments")
        spec, source, files, name = row.spec, row.source_path or row.name, row.files, row.name
        stored = {c.cell_key: c.variables for c in
                  s.scalars(select(Cell).where(Cell.experiment_id == experiment_id))}
    if not files or "base_config" not in files or not ({"server", "servers"} & set(files)):
        raise StoreError(
            f"experiment {name!r} was queued without its base config and server profile",
            where=f"experiments.id={experiment_id}",
            fix="queue it again with this flushbench (`flushbench queue add FILE`): a worker"
                " runs what was queued, never whatever the paths hold now",
        )
    queued = ExperimentSpec.model_validate(spec)
    exp, profile_files = _with_stored_files(
        queued, files, (work or work_dir()) / "queued" / f"experiment-{experiment_id}")
    ctx = prepare_experiment(exp, source, work, stored, keep_datadirs=keep_datadirs,
                             profile_files=profile_files)
    # As queued (names included, not the copies' paths), so the measurement hash is the queue's.
    ctx.files, ctx.exp = files, queued
    return ctx


def stored_files(report: PreflightReport) -> dict[str, Any]:
    """The files an experiment named, as preflight read them: what the queue keeps.

    One server: ``server`` {name, profile}, as before servers were a knob (so the measurement
    hash of a one-server experiment did not change). Cells naming servers: ``servers``, name →
    {name, profile} for every server a cell uses, so editing any of those profiles makes a new
    measurement, as editing the one profile does.
    """
    files: dict[str, Any] = {
        "base_config": {"name": report.experiment.base_config, "text": report.base_cnf_text},
    }
    dumped = {name: {"name": name, "profile": srv.profile.model_dump(mode="json")}
              for name, srv in report.servers.items()}
    if report.experiment.names_servers():
        files["servers"] = dumped
    else:
        files["server"] = next(iter(dumped.values()))
    return files


def _with_stored_files(exp: ExperimentSpec, files: dict[str, Any], folder: Path
                       ) -> tuple[ExperimentSpec, dict[str, Path]]:
    """Copies of the files an experiment was queued with (written here): the experiment
    pointing at the base config's copy, and server name → its profile's copy."""
    import yaml

    folder.mkdir(parents=True, exist_ok=True)
    base = folder / "base.cnf"
    base.write_text(files["base_config"]["text"], encoding="utf-8")
    entries = files.get("servers") or {files["server"]["name"]: files["server"]}
    profile_files: dict[str, Path] = {}
    for index, (name, entry) in enumerate(entries.items()):
        profile = folder / f"server-{index}.yaml"
        profile.write_text(yaml.safe_dump(entry["profile"], sort_keys=False), encoding="utf-8")
        profile_files[name] = profile
    return exp.model_copy(update={"base_config": str(base)}), profile_files


def stored_cells(ctx: ExperimentContext) -> dict[str, dict]:
    """Per cell key, what the queue keeps so a worker can run exactly this translation."""
    return {cell.key: stored_translation(ctx.server_of(cell), ctx.report.translations[cell.key])
            for cell in ctx.cells if cell.key in ctx.report.translations}


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


def _run_dir(ctx: ExperimentContext, run_id: int) -> Path:
    return ctx.work / "runs" / ctx.exp.name / f"run-{run_id:06d}"


class _PhaseTee:
    """Passes every reporter call through, and tells the heartbeat the current phase."""

    def __init__(self, reporter: Reporter, heartbeat: Heartbeat) -> None:
        self._reporter = reporter
        self._heartbeat = heartbeat

    def phase(self, text: str) -> None:
        self._heartbeat.set_phase(text)
        self._heartbeat.check()  # a lost lease stops the run at the next phase boundary
        self._reporter.phase(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._reporter, name)


def execute_run(
    db: ResultsDB,
    ctx: ExperimentContext,
    run_id: int,
    cell: CellSpec,
    reporter: Reporter,
    stop_event: threading.Event | None = None,
    heartbeat: Heartbeat | None = None,
) -> str:
    """Execute one claimed run; return its final status. Never raises for expected failures.

    ``heartbeat`` renews the run's lease for the whole run (a private one is started when
    None). When it reports the lease lost, the run stops at the next phase boundary or driver
    interval, records why, and leaves the run's outcome to whoever took it over.
    """
    own_heartbeat = heartbeat is None
    if heartbeat is None:
        heartbeat = Heartbeat(db, local_identity()).start()
        heartbeat.hold(run_id)
    try:
        return _execute_run(db, ctx, run_id, cell, reporter, stop_event, heartbeat)
    finally:
        if own_heartbeat:
            heartbeat.stop()


def _execute_run(
    db: ResultsDB,
    ctx: ExperimentContext,
    run_id: int,
    cell: CellSpec,
    reporter: Reporter,
    stop_event: threading.Event | None,
    heartbeat: Heartbeat,
) -> str:
    owner = heartbeat.identity.owner
    rec = RunRecorder(db, run_id)
    heartbeat.add_flusher(rec.flush)
    reporter = _PhaseTee(reporter, heartbeat)  # type: ignore[assignment]
    translation = ctx.report.translations[cell.key]
    server, server_name = ctx.server_of(cell), ctx.report.server_name(cell)
    snapshot = ctx.snapshots[server_name]
    run_dir = _run_dir(ctx, run_id)
    if run_dir.exists():
        shutil.rmtree(run_dir)  # a previous attempt's leftovers: the store kept its evidence
    run_dir.mkdir(parents=True)
    rec.set_run_fields(run_dir=str(run_dir))
    layout = SandboxLayout(run_dir).create()
    sandbox: MysqldSandbox | None = None
    ended = RunStatus.INTERRUPTED  # what the run ended as, for the disk policy in `finally`

    def final(status: str, error: str | None) -> bool:
        nonlocal ended
        ended = status
        # Buffered rows first (the database may have blinked), then the status, and only
        # while this worker still holds the run: never overwrite a takeover's outcome.
        patience = max(heartbeat.lease_s, FINAL_WRITE_PATIENCE_S)
        rec.drain(timeout_s=patience)
        if status == RunStatus.DONE:
            heartbeat.check()  # lost meanwhile: not ours to call done
        heartbeat.release()
        return retrying(lambda: queue.finish(db, run_id, status, error, owner=owner),
                        patience, f"record run {run_id} as {status}", db)

    try:
        reporter.phase("restoring datadir")
        try:
            restore(snapshot, layout.datadir, abort=heartbeat.lost,
                    expect=dataset_key(ctx, server_name))
        except DatasetError:
            heartbeat.check()  # stopped because the lease was lost: report that, not the copy
            raise
        write_mycnf(layout.cnf, ctx.report.base_cnf_text, translation.server_options, layout)
        sandbox = MysqldSandbox(server, layout, allocator=translation.allocator)
        # THP is host-wide: put back what a killed flushbench left, set this run's mode before
        # mysqld starts, restore it once mysqld has stopped (the ExitStack leaves last).
        reap_stale_groups()  # throttle groups a killed flushbench left behind
        if (leftover := restore_leftover_thp()) is not None:
            rec.event("warning", "thp-restored", f"restored THP left by a killed run: {leftover}")
        with contextlib.ExitStack() as host, sandbox:
            thp = host.enter_context(thp_setting(translation.thp))
            # Storage throttle and CPU pinning hold for mysqld's whole life: entered before it
            # starts, left after it stopped (the sandbox leaves the `with` first).
            controls = host.enter_context(RunHostControls(
                translation.storage, layout.datadir, mysqld_cpus=ctx.exp.cpus.mysqld,
                driver_cpus=ctx.exp.cpus.driver, cpu_method=ctx.exp.cpus.method))
            sandbox.argv_wrap = controls.wrap_mysqld
            reporter.phase("starting mysqld")
            sandbox.start()
            variables = sandbox.global_variables()
            rec.variables(variables)
            rec.metadata(
                **host_facts(layout.datadir),
                server_flavor=server.flavor,
                server_version=variables.get("version", server.version_string),
                dataset_key=snapshot.key.dirname(),
                experiment_hash=measurement_hash(ctx.exp, ctx.files),
                driver=ctx.exp.workload.driver,
                extra={"allocator": translation.allocator, "cell_key": cell.key,
                       "server": {"name": server_name, "profile": server.profile.name,
                                  "label": server.label, "mysqld": str(server.mysqld),
                                  "version_string": server.version_string},
                       **thp.as_record(), "large_pages": variables.get("large_pages"),
                       "host_id": heartbeat.identity.host_id,
                       "host_class": heartbeat.identity.host_class,
                       **controls.record(sandbox.pid)},
            )
            reporter.phase("verifying variables")
            sandbox.verify_applied(translation.expected)
            if translation.allocator:
                sandbox.verify_allocator(translation.allocator)
            if translation.large_pages:
                # MariaDB falls back to normal pages with only a warning; check what it holds.
                sandbox.verify_large_pages()
            if ctx.exp.pre_run.drain_dirty_pages:
                reporter.phase("draining dirty pages")
                with sandbox.connect() as conn:
                    drain_dirty_pages(
                        conn,
                        below=ctx.exp.pre_run.drain_dirty_pages_below,
                        timeout=ctx.exp.pre_run.drain_timeout,
                    )
            _measure(ctx, cell, translation, sandbox, layout, rec, reporter, run_dir, stop_event,
                     controls,
                     heartbeat)
            reporter.phase("stopping mysqld")
            sandbox.stop()
        reporter.phase("recording")
        if not final(RunStatus.DONE, None):
            raise LeaseLost(f"run {run_id} was taken over before it could be recorded as done")
        with contextlib.suppress(StoreError):  # the run is done; a lost rerun is only a rerun
            retrying(lambda: apply_policy(db, ctx.exp, run_id), FINAL_WRITE_PATIENCE_S,
                     f"queue a rerun of disturbed run {run_id}", db)
        reporter.run_finished(run_id, RunStatus.DONE, None)
        return RunStatus.DONE
    except KeyboardInterrupt:
        rec.event("error", "interrupted", "flushbench was interrupted (Ctrl-C / SIGTERM)")
        final(RunStatus.INTERRUPTED, "interrupted by the user")
        reporter.run_finished(run_id, RunStatus.INTERRUPTED, "interrupted")
        raise
    except LeaseLost as exc:
        # Another worker may be running this run's new attempt: say why we stopped, on our
        # row only, and leave the status alone unless we still hold it.
        rec.event("error", "lease-lost", exc.render(), heartbeat.lost_reason)
        if final(RunStatus.INTERRUPTED, f"lease lost: {heartbeat.lost_reason or exc.what}"):
            # Nobody took it over (the database was down): give it back as a new attempt.
            retrying(lambda: queue.queue_new_attempt(db, run_id),
                     max(heartbeat.lease_s, FINAL_WRITE_PATIENCE_S), f"queue run {run_id} again",
                     db)
        reporter.run_finished(run_id, RunStatus.INTERRUPTED, exc.what)
        return RunStatus.INTERRUPTED
    except FlushbenchError as exc:
        evidence = _evidence(exc, sandbox)
        rec.event("error", type(exc).__name__, exc.render(), evidence)
        final(RunStatus.FAILED, exc.render())
        reporter.run_finished(run_id, RunStatus.FAILED, exc.render())
        return RunStatus.FAILED
    finally:
        layout.cleanup()
        _dispose(ctx, layout, run_dir, rec, ended)
        rec.close()  # the disk reserve kept for recording a failure (runner.recorder)


def _dispose(ctx: ExperimentContext, layout: SandboxLayout, run_dir: Path,
             rec: RunRecorder, status: str) -> None:
    """The disk policy (runner.disk) once the run's status is written: datadirs go."""
    try:
        note = dispose_datadir(layout.datadir, status, keep_datadirs=ctx.keep_datadirs,
                               runs_dir=run_dir.parent)
    except OSError as exc:  # never let cleanup hide the run's own outcome
        note = f"datadir could not be removed: {exc}"
    if note:
        with contextlib.suppress(Exception):
            rec.event("info", "datadir", note)


def _evidence(exc: FlushbenchError, sandbox: MysqldSandbox | None) -> str:
    parts = []
    extra = exc.evidence
    if extra:
        parts.append(str(extra))
    if sandbox is not None:
        code = sandbox.exit_code
        if code is not None:
            parts.append(f"mysqld exit code: {code}")
        try:
            parts.append("mysqld error log (tail):\n" + sandbox.error_log_tail(60))
        except OSError:
            pass
    return "\n\n".join(parts)


def _measure(
    ctx: ExperimentContext,
    cell: CellSpec,
    translation: Any,
    sandbox: MysqldSandbox,
    layout: SandboxLayout,
    rec: RunRecorder,
    reporter: Reporter,
    run_dir: Path,
    stop_event: threading.Event | None,
    controls: RunHostControls,
    heartbeat: Heartbeat,
) -> None:
    exp = ctx.exp
    workload = get_workload(exp.workload.driver, exp.workload.binaries)
    conn = sandbox.connection_info(database=workload.database)
    connections = translation.connections or exp.workload.connections
    driver_pid: list[int | None] = [None]
    # Kept for the checks after the run (steady start, disturbances: runner.run_checks).
    kept_samples: list[Any] = []
    kept_intervals: list[Any] = []
    measure_start: dt.datetime | None = None

    def on_sample(sample: Any) -> None:
        kept_samples.append(sample)
        rec.sample(sample)
        reporter.sample(sample)

    clock = ClockWatch()  # a host pause during the run becomes a run warning (runner.host.clock)
    sampler = None
    if exp.sampling.enabled:
        sampler = Sampler(
            connect=sandbox.connect,
            mysqld_pid=sandbox.pid,
            driver_pid=lambda: driver_pid[0],
            datadir=layout.datadir,
            interval=exp.sampling.interval,
            engine_status=exp.sampling.engine_status,
            on_sample=on_sample,
            group_counters=controls.counters,
        )
        sampler.start()
    try:
        reporter.phase("warmup")
        watchdog = WATCHDOG_INTERVALS * exp.workload.report_interval + WATCHDOG_SLACK_S
        with workload.run(
            conn, exp.workload, connections, exp.dataset, run_dir / "driver"
        ).wrapped(controls.wrap_driver) as running:
            driver_pid[0] = running.pid
            measuring = False
            io_before: IoCounters | None = None
            measure_from = 0.0
            pinned: dict[str, Any] = {}
            for record in running.intervals(timeout_s=watchdog):
                rec.interval(record)
                kept_intervals.append(record)
                if controls.pins and not pinned:  # the driver runs (and was placed) by now
                    pinned = controls.record(driver_pid=running.pid)
                if record.phase == "measure" and not measuring:
                    measuring = True
                    reporter.phase("measuring")
                    start = as_utc(record.ts) - dt.timedelta(seconds=record.interval_s)
                    rec.set_run_fields(measure_started_at=start)
                    measure_start = start
                    io_before, measure_from = controls.counters(), time.monotonic()
                reporter.interval(record)
                if not sandbox.alive():
                    raise ServerError(
                        f"mysqld died during the run (exit code {sandbox.exit_code})",
                        where=str(layout.error_log),
                        fix="see the error log tail in the run's evidence",
                    )
                if (stop_event is not None and stop_event.is_set()) or heartbeat.lost.is_set():
                    running.stop()
            outcome = running.outcome()
            io_after, measured_s = controls.counters(), time.monotonic() - measure_from
    finally:
        if sampler is not None:
            sampler.stop()
            if (missed := sampler.missed_warning()) is not None:
                rec.event("warning", "samples-missed", missed)
        if (paused := pause_warning(clock.jump_s())) is not None:
            # Like every warning event it reaches the run's "done" line through run_summary.
            rec.event("warning", "host-paused", paused)
    limits = controls.spec.model_dump() if controls.throttle is not None else None
    record_checks(exp, rec, kept_intervals, kept_samples, measure_start, limits)
    _storage_proof(controls, io_before, io_after, measured_s, pinned, rec)
    heartbeat.check()  # a lease lost mid-measure: the driver was stopped, say why
    rec.set_run_fields(driver_summary=outcome.summary)
    if not sandbox.alive():
        raise ServerError(
            f"mysqld died during the run (exit code {sandbox.exit_code})",
            where=str(layout.error_log),
            fix="see the error log tail in the run's evidence",
        )
    failure = workload.failure(outcome)
    if failure is not None:
        raise WorkloadError(
            f"the {exp.workload.driver} driver {failure}",
            where=str(run_dir / "driver"),
            fix="see the driver's stderr in the run's evidence",
            evidence=f"driver exit code: {outcome.exit_code}\n"
            f"driver stderr (tail):\n{outcome.stderr_tail}",
        )
    if rec.intervals_written == 0:
        raise WorkloadError("the driver reported no interval", where=str(run_dir / "driver"))


def _storage_proof(controls: RunHostControls, before: IoCounters | None,
                   after: IoCounters | None, seconds: float, pinned: dict[str, Any],
                   rec: RunRecorder) -> None:
    """Record the limits and the I/O the throttle group really did; fail if a limit slipped."""
    if pinned:
        rec.event("info", "cpu-placement", "CPU placement", json.dumps(pinned, default=str))
    if before is None or after is None:
        return
    verdict = controls.judge(before, after, seconds)
    if verdict is None:
        return
    evidence = json.dumps({**verdict.as_record(), **(after - before).as_record()}, default=str)
    rec.event("info", "storage", f"storage limits {verdict.status}: {verdict.reason}", evidence)
    if not verdict.ok:
        raise ServerError(
            f"the storage limits were not in force: {verdict.reason}",
            where="storage",
            fix="check `flushbench doctor` (I/O throttle) and the run's storage event",
            evidence=evidence,
        )


@dataclass
class ExperimentOutcome:
    """What ``run_experiment`` did."""

    experiment_id: int
    done: int = 0
    failed: int = 0
    interrupted: int = 0


def run_experiment(
    experiment: str | Path | ExperimentContext,
    db: ResultsDB,
    *,
    fresh: bool = False,
    retry_failed: bool = False,
    reporter: Reporter | None = None,
    work: Path | None = None,
    on_prepared: Callable[[ExperimentContext, queue.EnqueueResult], None] | None = None,
    identity: Identity | None = None,
    lease_s: float = queue.LEASE_S,
) -> ExperimentOutcome:
    """Preflight (unless given a prepared context), enqueue, then execute the queued runs.

    Rerunning resumes: finished runs are kept, interrupted ones are redone (see
    :mod:`runner.queue`). Failed runs do not stop the queue.
    """
    reporter = reporter or NullReporter()
    ctx = experiment if isinstance(experiment, ExperimentContext) else prepare(experiment, work)
    enq = queue.enqueue(
        db, ctx.exp, ctx.cells, stored_cells(ctx), ctx.source, fresh=fresh,
        retry_failed=retry_failed, files=ctx.files,
    )
    reap_leftover_servers(db, enq.experiment_id)
    if on_prepared is not None:
        on_prepared(ctx, enq)
    return work_queue(db, ctx, enq.experiment_id, reporter, identity=identity, lease_s=lease_s)


class ContextExecutor:
    """Executes claimed runs of one prepared experiment (``run``, or a stored one: ``worker``).

    Parameters
    ----------
    ctx:
        A prepared context, or None to prepare each experiment from what the queue stored
        (:func:`prepare_stored`) — what ``flushbench worker`` does.
    """

    def __init__(
        self,
        db: ResultsDB,
        reporter: Reporter,
        ctx: ExperimentContext | None = None,
        work: Path | None = None,
        keep_datadirs: bool = False,
    ) -> None:
        self.db = db
        self.reporter = reporter
        self.work = work
        self.keep_datadirs = keep_datadirs
        self.contexts: dict[int, ExperimentContext] = {}
        self._given = ctx
        self.index = 0

    def prepare(self, experiment_id: int) -> None:
        """Preflight on this host (stored experiments) and make sure the dataset exists."""
        ctx = self._given or prepare_stored(self.db, experiment_id, self.work,
                                            keep_datadirs=self.keep_datadirs)
        ensure_experiment_dataset(ctx, self.reporter)
        self.contexts[experiment_id] = ctx

    def execute(self, run_id: int, heartbeat: Heartbeat) -> str:
        """Execute one claimed run of a prepared experiment."""
        with self.db.session() as s:
            run = s.get(Run, run_id)
            assert run is not None
            exp_id = s.get(Cell, run.cell_id).experiment_id
            total = _count_queued(self.db, exp_id) + 1
        ctx = self.contexts[exp_id]
        cell, repetition = _cell_of(self.db, ctx, run_id)
        self.index += 1
        self.reporter.run_started(self.index, self.index - 1 + total, cell, repetition, run_id)
        return execute_run(self.db, ctx, run_id, cell, self.reporter, heartbeat=heartbeat)


def reporter_log(reporter: Reporter) -> Callable[[str], None]:
    """Where a worker's one-line notes go: the reporter's ``note`` if it has one."""
    note = getattr(reporter, "note", None)
    return note if callable(note) else reporter.phase


def work_queue(
    db: ResultsDB,
    ctx: ExperimentContext,
    experiment_id: int,
    reporter: Reporter,
    *,
    identity: Identity | None = None,
    lease_s: float = queue.LEASE_S,
) -> ExperimentOutcome:
    """Claim and execute the experiment's queued runs until none is left (the worker loop of
    :mod:`runner.worker`, limited to this experiment: host lock, heartbeat, takeovers)."""
    outcome = ExperimentOutcome(experiment_id=experiment_id)
    if _count_queued(db, experiment_id) == 0:
        return outcome
    executor = ContextExecutor(db, reporter, ctx)
    done = serve(db, identity or local_identity(), executor, reporter_log(reporter),
                 WorkerOptions(lease_s=lease_s, experiment_id=experiment_id))
    outcome.done = done.count(RunStatus.DONE)
    outcome.failed = done.count(RunStatus.FAILED)
    outcome.interrupted = done.count(RunStatus.INTERRUPTED)
    return outcome


def reap_leftover_servers(db: ResultsDB, experiment_id: int) -> list[int]:
    """Kill mysqld processes left behind by runs whose flushbench died (SIGKILL, power cut).

    A killed flushbench cannot stop its sandbox; the next ``run`` finds the run marked
    interrupted and its mysqld still alive. Only a process whose command line names that run's
    own my.cnf is killed. Returns the pids killed.
    """
    with db.session() as s:
        run_dirs = s.scalars(
            select(Run.run_dir)
            .join(Cell)
            .where(
                Cell.experiment_id == experiment_id,
                Run.status.in_(ENDED_WITHOUT_RESULT),
                Run.run_dir.is_not(None),
            )
        ).all()
    return kill_leftover_servers(list(run_dirs))


def _count_queued(db: ResultsDB, experiment_id: int) -> int:
    with db.session() as s:
        return (
            s.scalar(
                select(func.count(Run.id))
                .join(Cell)
                .where(Cell.experiment_id == experiment_id, Run.status == RunStatus.QUEUED)
            )
            or 0
        )


def _cell_of(db: ResultsDB, ctx: ExperimentContext, run_id: int) -> tuple[CellSpec, int]:
    with db.session() as s:
        run = s.get(Run, run_id)
        assert run is not None
        key = s.get(Cell, run.cell_id).cell_key
        return ctx.cells_by_key[key], run.repetition
