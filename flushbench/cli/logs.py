"""Plain timestamped log lines for a worker or a ``run`` nobody watches (nohup, systemd, cron).

One line per phase and per finished run: the cell, the primary metric over the measurement
window, the stability score and warnings — or the failure's one-line cause and where its
evidence is. Lines go to stdout and, with ``--log-file``, to that file (appended).
"""

from __future__ import annotations

import datetime as dt
import sys
import threading
from pathlib import Path
from typing import Any, TextIO

from core.errors import ConfigError
from core.filecheck import check_output_file, same_file
from core.paths import open_private
from core.redaction import redact
from core.units import format_number as number
from store.db import ResultsDB


def check_log_file(log_file: Path, db_url: str | None = None) -> None:
    """``--log-file`` must be a writable regular file (or absent), and not the results database.

    Raises
    ------
    ConfigError
        For a FIFO (it would block), a directory, a device, an unwritable path, or the results
        database itself (log lines appended to it would damage it).
    """
    check_output_file(log_file, "the log file (--log-file)")
    if db_url is not None and db_url.startswith("sqlite:///"):
        db_path = Path(db_url.removeprefix("sqlite:///"))
        for suffix in ("", "-wal", "-shm", "-journal"):
            if same_file(log_file, db_path.with_name(db_path.name + suffix)):
                raise ConfigError("the log file is the results database", where=str(log_file),
                                  fix="name another file, e.g. work/logs/worker.log")


def cell_called(cell: Any) -> str:
    """``row dw-off-60`` for a cell its include row names, else ``cell doublewrite=off``: the
    name the summary table and every report use for the row."""
    name = getattr(cell, "name", None)
    return f"row {name}" if name else f"cell {cell.label}"


def _stamp() -> str:
    return dt.datetime.now().astimezone().isoformat(timespec="seconds")


class LogReporter:
    """A :class:`runner.admission.run_context.Reporter` writing one timestamped line per event.

    Parameters
    ----------
    db:
        The results database (the finished-run line reads the run's summary from it).
    log_file:
        Also append every line to this file (created with its folder).
    stream:
        Where lines go besides the file (stdout by default; None: only the file).
    """

    def __init__(
        self, db: ResultsDB, log_file: Path | None = None, stream: TextIO | None = sys.stdout
    ) -> None:
        self.db = db
        self.stream = stream
        self.file: TextIO | None = None
        if log_file is not None:
            check_log_file(log_file, db.url)
            log_file.parent.mkdir(parents=True, exist_ok=True)
            self.file = open_private(log_file, "a")
        self._lock = threading.Lock()
        self._run: dict[str, Any] = {}

    def close(self) -> None:
        """Close the log file."""
        if self.file is not None:
            self.file.close()
            self.file = None

    def __enter__(self) -> LogReporter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def note(self, text: str) -> None:
        """One line, timestamped (also what the worker loop logs through)."""
        line = f"{_stamp()} {redact(text)}\n"
        with self._lock:
            for sink in (self.stream, self.file):
                if sink is not None:
                    sink.write(line)
                    sink.flush()

    # --- the Reporter protocol -------------------------------------------------------------

    def run_started(self, index: int, total: int, cell: Any, repetition: int, run_id: int) -> None:
        """A run was claimed."""
        self._run = {"id": run_id, "cell": cell_called(cell), "repetition": repetition}
        self.note(f"run {run_id} started: {cell_called(cell)}, repetition {repetition}"
                  f" ({index}/{total})")

    def phase(self, text: str) -> None:
        """A phase of the current run (or of the worker) began."""
        prefix = f"run {self._run['id']}: " if self._run else ""
        self.note(prefix + text)

    def interval(self, record: Any) -> None:
        """Driver intervals are not logged (the store has them)."""

    def sample(self, record: Any) -> None:
        """Sampler ticks are not logged (the store has them)."""

    def run_finished(self, run_id: int, status: str, error: str | None) -> None:
        """The run's one-line outcome: figures when done, cause and evidence otherwise."""
        cell = self._run.get("cell", "cell ?")
        rep = self._run.get("repetition", "?")
        head = f"run {run_id} {status}: {cell}, repetition {rep}"
        if status == "done":
            self.note(f"{head}, {self._figures(run_id)}")
        else:
            cause = (error or status).strip().splitlines()[0] if (error or status).strip() else ""
            self.note(f"{head}: {cause}; evidence: `flushbench show {run_id}`"
                      f"{self._run_dir(run_id)}")
        self._run = {}

    # --- helpers -----------------------------------------------------------------------------

    def _run_dir(self, run_id: int) -> str:
        from store.models import Run

        try:
            with self.db.session() as s:
                run = s.get(Run, run_id)
                return f", run dir {run.run_dir}" if run is not None and run.run_dir else ""
        except Exception:  # the log line matters more than its detail  # noqa: BLE001
            return ""

    def _figures(self, run_id: int) -> str:
        """``NOTPM 12,345 (window mean), stability 87, warnings: …`` for one run."""
        try:
            from analysis.tables import frames
            from store.models import Cell, Experiment, Run

            with self.db.session() as s:
                run = s.get(Run, run_id)
                exp = s.get(Experiment, s.get(Cell, run.cell_id).experiment_id)
                metric = dict(exp.metric or {})
            # This run alone, whatever its attempt: a disturbed run whose rerun is already
            # queued is no longer the latest attempt, and its line must still say its figures.
            runs = frames.runs(self.db, run_ids=[run_id])
            ivals = frames.intervals(self.db, run_ids=[run_id], detail=False)
            row = frames.run_summary(self.db, runs_df=runs, intervals_df=ivals).iloc[0]
        except Exception as exc:  # noqa: BLE001 - never lose the "done" line over a summary
            return f"(no summary: {type(exc).__name__}: {exc})"
        name = metric.get("name", "NOTPM")
        value = row.get("notpm")
        if not metric.get("per_minute", True) and value is not None:
            value = value / 60.0  # the series is per minute; TPS is per second
        warnings = str(row.get("warnings") or "").strip()
        return (f"{name} {number(value)} (window mean), stability"
                f" {number(row.get('score'), '.0f')} (CV {number(row.get('cv_pct'), '.1f')} %)"
                + (f", warnings: {warnings}" if warnings else ", no warnings"))
