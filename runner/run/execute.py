"""One run's life, top to bottom: restore → my.cnf → start → verify → drain → measure → stop →
record. A failing run is recorded with its evidence and the caller goes on.

The steps are those of docs/architecture.md ("a walk of one run"): :func:`execute_run` takes a
run the worker claimed (:mod:`runner.fleet.worker`) on a prepared context
(:mod:`runner.admission.run_context`),
restores its server's dataset into a fresh run directory, writes my.cnf, starts mysqld under
the run's host controls, records the server's variables and the run's metadata, verifies the
values applied, drains dirty pages when asked, hands the started server to
:func:`runner.run.measure.measure`, stops mysqld and writes the run's status last.
"""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.errors import FlushbenchError, StoreError
from core.experiment.hashes import measurement_hash
from core.experiment.spec import CellSpec, start_jitter, start_offset
from core.experiment.translation import Translation
from runner.admission.disk import dispose_datadir
from runner.admission.run_context import ExperimentContext, Reporter, dataset_key
from runner.datasets import DatasetError, Snapshot, restore
from runner.host.cgroups import reap_stale_groups
from runner.host.controls import RunHostControls
from runner.host.thp import ThpState, restore_leftover_thp, thp_setting
from runner.run.measure import measure
from runner.run.metadata import code_version, host_facts
from runner.run.run_checks import apply_policy
from runner.run.run_lease import LeaseLost, RunLease
from runner.server import (
    MysqldSandbox,
    ResolvedServer,
    SandboxLayout,
    drain_dirty_pages,
    write_mycnf,
)
from runner.server.options import option_list
from store import ledger
from store.db import ResultsDB
from store.ledger.recorder import RunRecorder, retrying
from store.models import RunStatus

#: How long a finished run waits for the results database to write its buffered rows and its
#: status (at least one lease): a database restart must not cost a finished measurement.
FINAL_WRITE_PATIENCE_S = 60.0


class _PhaseTee:
    """Passes every reporter call through, and tells the heartbeat the current phase."""

    def __init__(self, reporter: Reporter, heartbeat: RunLease) -> None:
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
    *,
    heartbeat: RunLease,
) -> str:
    """Execute one claimed run; return its final status. Never raises for expected failures.

    ``heartbeat`` renews the run's lease for the whole run (the worker's, holding this run).
    When it reports the lease lost, the run stops at the next phase boundary or driver
    interval, records why, and leaves the run's outcome to whoever took it over.
    """
    return _execute_run(db, ctx, run_id, cell, reporter, stop_event, heartbeat)


@dataclass
class _Run:
    """One claimed run while it executes: what it runs, where, and who records it."""

    db: ResultsDB
    ctx: ExperimentContext
    run_id: int
    cell: CellSpec
    reporter: Reporter
    heartbeat: RunLease
    rec: RunRecorder
    run_dir: Path
    layout: SandboxLayout
    #: The cell's translation for its server (preflight's, or the one queued).
    translation: Translation
    #: The server binary that runs this cell, its name as written, its loaded dataset.
    server: ResolvedServer
    server_name: str
    snapshot: Snapshot
    sandbox: MysqldSandbox | None = None
    #: What the run ended as, for the disk policy once it is over.
    ended: str = RunStatus.INTERRUPTED

    def final(self, status: str, error: str | None) -> bool:
        """Write the run's status last; False when the run is no longer this worker's."""
        self.ended = status
        # Buffered rows first (the database may have blinked), then the status, and only
        # while this worker still holds the run: never overwrite a takeover's outcome.
        patience = max(self.heartbeat.lease_s, FINAL_WRITE_PATIENCE_S)
        self.rec.drain(timeout_s=patience)
        if status == RunStatus.DONE:
            self.heartbeat.check()  # lost meanwhile: not ours to call done
        self.heartbeat.release()
        owner = self.heartbeat.identity.owner
        return retrying(lambda: ledger.finish(self.db, self.run_id, status, error, owner=owner),
                        patience, f"record run {self.run_id} as {status}", self.db)


def _execute_run(
    db: ResultsDB,
    ctx: ExperimentContext,
    run_id: int,
    cell: CellSpec,
    reporter: Reporter,
    stop_event: threading.Event | None,
    heartbeat: RunLease,
) -> str:
    run = _open_run(db, ctx, run_id, cell, reporter, heartbeat)
    try:
        _restore_datadir(run)
        _start_measure_stop(run, stop_event)
        return _record_done(run)
    except KeyboardInterrupt:
        run.rec.event("error", "interrupted", "flushbench was interrupted (Ctrl-C / SIGTERM)")
        run.final(RunStatus.INTERRUPTED, "interrupted by the user")
        run.reporter.run_finished(run_id, RunStatus.INTERRUPTED, "interrupted")
        raise
    except LeaseLost as exc:
        return _record_lease_lost(run, exc)
    except FlushbenchError as exc:
        run.rec.event("error", type(exc).__name__, exc.render(), _evidence(exc, run.sandbox))
        run.final(RunStatus.FAILED, exc.render())
        run.reporter.run_finished(run_id, RunStatus.FAILED, exc.render())
        return RunStatus.FAILED
    finally:
        run.layout.cleanup()
        _dispose(ctx, run.layout, run.run_dir, run.rec, run.ended)
        run.rec.close()  # the disk reserve kept for recording a failure (store.ledger.recorder)


def _open_run(db: ResultsDB, ctx: ExperimentContext, run_id: int, cell: CellSpec,
              reporter: Reporter, heartbeat: RunLease) -> _Run:
    """The run's recorder, what it runs, and a fresh run directory (its path recorded on
    the run)."""
    rec = RunRecorder(db, run_id)
    heartbeat.add_flusher(rec.flush)
    translation = ctx.report.translations[cell.key]
    if (step_rate := ledger.step_rate_of(db, run_id)) is not None:
        # One step of a rate search: this run holds the rate the search chose for it.
        translation = dataclasses.replace(translation, rate=step_rate)
    server, server_name = ctx.server_of(cell), ctx.report.server_name(cell)
    snapshot = ctx.snapshots[server_name]
    run_dir = ctx.work / "runs" / ctx.exp.name / f"run-{run_id:06d}"
    if run_dir.exists():
        shutil.rmtree(run_dir)  # a previous attempt's leftovers: the store kept its evidence
    run_dir.mkdir(parents=True)
    rec.set_run_fields(run_dir=str(run_dir))
    layout = SandboxLayout(run_dir).create()
    return _Run(db, ctx, run_id, cell, _PhaseTee(reporter, heartbeat),  # type: ignore[arg-type]
                heartbeat, rec, run_dir, layout, translation, server, server_name, snapshot)


def _restore_datadir(run: _Run) -> None:
    """Copy the server's dataset snapshot into the run's datadir."""
    run.reporter.phase("restoring datadir")
    try:
        restore(run.snapshot, run.layout.datadir, abort=run.heartbeat.lost,
                expect=dataset_key(run.ctx, run.server_name))
    except DatasetError:
        run.heartbeat.check()  # stopped because the lease was lost: report that, not the copy
        raise


def _start_measure_stop(run: _Run, stop_event: threading.Event | None) -> None:
    """my.cnf → start mysqld under the host controls → record → verify → drain → measure →
    stop mysqld."""
    ctx, tr, layout, rec = run.ctx, run.translation, run.layout, run.rec
    write_mycnf(layout.cnf, ctx.report.base_cnf_text, tr.server_options, layout,
                option_names=option_list(run.server))
    sandbox = run.sandbox = MysqldSandbox(run.server, layout, allocator=tr.allocator)
    # THP is host-wide: put back what a killed flushbench left, set this run's mode before
    # mysqld starts, restore it once mysqld has stopped (the ExitStack leaves last).
    reap_stale_groups()  # throttle groups a killed flushbench left behind
    if (leftover := restore_leftover_thp()) is not None:
        rec.event("warning", "thp-restored", f"restored THP left by a killed run: {leftover}")
    with contextlib.ExitStack() as host, sandbox:
        thp = host.enter_context(thp_setting(tr.thp))
        # Storage throttle and CPU pinning hold for mysqld's whole life: entered before it
        # starts, left after it stopped (the sandbox leaves the `with` first).
        controls = host.enter_context(RunHostControls(
            tr.storage, layout.datadir, mysqld_cpus=ctx.exp.cpus.mysqld,
            driver_cpus=ctx.exp.cpus.driver, cpu_method=ctx.exp.cpus.method))
        sandbox.argv_wrap = controls.wrap_mysqld
        run.reporter.phase("starting mysqld")
        sandbox.start()
        _record_server(run, sandbox, thp, controls)
        _verify(run, sandbox)
        if ctx.exp.pre_run.drain_dirty_pages:
            run.reporter.phase("draining dirty pages")
            with sandbox.connect() as conn:
                drain_dirty_pages(conn, below=ctx.exp.pre_run.drain_dirty_pages_below,
                                  timeout=ctx.exp.pre_run.drain_timeout)
        measure(ctx, run.cell, tr, sandbox, layout, rec, run.reporter, run.run_dir, stop_event,
                controls, run.heartbeat)
        run.reporter.phase("stopping mysqld")
        # The run's datadir is deleted once recorded (a copy of the snapshot): flushing its
        # buffer pool at shutdown would only cost time, a minute per run under a storage limit.
        # Kept datadirs (--keep-datadirs) get the usual shutdown, so they open without recovery.
        sandbox.stop(discard=not run.ctx.keep_datadirs)


def _record_server(run: _Run, sandbox: MysqldSandbox, thp: ThpState,
                   controls: RunHostControls) -> None:
    """The started server's global variables and the run's metadata (host, server, dataset,
    measurement hash, allocator, THP, host controls)."""
    server, tr, identity = run.server, run.translation, run.heartbeat.identity
    variables = sandbox.global_variables()
    run.rec.variables(variables)
    offset, bound = start_offset(run.ctx.exp, run.run_id), start_jitter(run.ctx.exp)
    if bound > 0:
        run.rec.event("info", "start-offset",
                      f"start offset {offset:.0f} s: the workload warms up that much longer"
                      f" (drawn uniformly from 0–{bound:.0f} s from order.seed"
                      f" {run.ctx.exp.order.seed} and run id {run.run_id})")
    run.rec.metadata(
        **host_facts(run.layout.datadir),
        server_flavor=server.flavor,
        server_version=variables.get("version", server.version_string),
        dataset_key=run.snapshot.key.dirname(),
        experiment_hash=measurement_hash(run.ctx.exp, run.ctx.files),
        driver=run.ctx.exp.workload.driver,
        extra={"allocator": tr.allocator, "cell_key": run.cell.key,
               "server": {"name": run.server_name, "profile": server.profile.name,
                          "label": server.label, "mysqld": str(server.mysqld),
                          "version_string": server.version_string,
                          # The build's own name for itself (Percona's release, a wsrep tag).
                          "version_comment": variables.get("version_comment")},
               **thp.as_record(), "large_pages": variables.get("large_pages"),
               "host_id": identity.host_id, "host_class": identity.host_class,
               # Which flushbench recorded it: runs of one study may span commits.
               "flushbench": code_version(),
               # pre_run.start_jitter: the extra warm-up this run had (the analysis adds it
               # to the experiment's warmup for this run's time axis).
               "start_offset_s": offset, "start_jitter_s": bound,
               **controls.record(sandbox.pid)},
    )


def _verify(run: _Run, sandbox: MysqldSandbox) -> None:
    """The server runs the values, allocator and large pages the cell asked for."""
    tr = run.translation
    run.reporter.phase("verifying variables")
    sandbox.verify_applied(tr.expected)
    if tr.allocator:
        sandbox.verify_allocator(tr.allocator)
    if tr.large_pages:
        # MariaDB falls back to normal pages with only a warning; check what it holds.
        sandbox.verify_large_pages()


def _record_done(run: _Run) -> str:
    """Status ``done`` last (after every buffered row), then the ``disturbed:`` policy."""
    run.reporter.phase("recording")
    if not run.final(RunStatus.DONE, None):
        raise LeaseLost(f"run {run.run_id} was taken over before it could be recorded as done")
    with contextlib.suppress(StoreError):  # the run is done; a lost rerun is only a rerun
        retrying(lambda: apply_policy(run.db, run.ctx.exp, run.run_id), FINAL_WRITE_PATIENCE_S,
                 f"queue a rerun of disturbed run {run.run_id}", run.db)
    run.reporter.run_finished(run.run_id, RunStatus.DONE, None)
    return RunStatus.DONE


def _record_lease_lost(run: _Run, exc: LeaseLost) -> str:
    """Another worker may be running this run's new attempt: say why we stopped, on our row
    only, and leave the status alone unless we still hold it."""
    heartbeat = run.heartbeat
    run.rec.event("error", "lease-lost", exc.render(), heartbeat.lost_reason)
    if run.final(RunStatus.INTERRUPTED, f"lease lost: {heartbeat.lost_reason or exc.what}"):
        # Nobody took it over (the database was down): give it back as a new attempt.
        retrying(lambda: ledger.queue_new_attempt(run.db, run.run_id),
                 max(heartbeat.lease_s, FINAL_WRITE_PATIENCE_S),
                 f"queue run {run.run_id} again", run.db)
    run.reporter.run_finished(run.run_id, RunStatus.INTERRUPTED, exc.what)
    return RunStatus.INTERRUPTED


def _dispose(ctx: ExperimentContext, layout: SandboxLayout, run_dir: Path,
             rec: RunRecorder, status: str) -> None:
    """The disk policy (runner.admission.disk) once the run's status is written: datadirs go."""
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
