"""Rich live progress for ``flushbench run``: cell i/N, repetition, phase, elapsed/ETA, and the
latest NOTPM, dirty-page % and checkpoint age as they arrive."""

from __future__ import annotations

import json
import time
import zlib
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from core.units import format_duration
from flushbench.cli.console import literal
from flushbench.cli.logs import cell_called


class LiveReporter:
    """A :class:`runner.admission.run_context.Reporter` drawing one live panel on the terminal."""

    def __init__(self, console: Console, run_seconds: float) -> None:
        self.console = console
        self.run_seconds = run_seconds
        self.live = Live(console=console, refresh_per_second=2, transient=False)
        self.started = time.monotonic()
        self.run_started_at = self.started
        self.header = "preparing"
        self.phase_text = ""
        self.index = 0
        self.total = 0
        self.notpm: float | None = None
        self.dirty_pct: float | None = None
        self.ckpt_mb: float | None = None
        self.finished: list[tuple[str, str]] = []

    def __enter__(self) -> LiveReporter:
        self.live.__enter__()
        self._refresh()
        return self

    def __exit__(self, *exc: object) -> None:
        self._refresh()
        self.live.__exit__(*exc)  # type: ignore[arg-type]

    def run_started(self, index: int, total: int, cell: Any, repetition: int, run_id: int) -> None:
        self.index, self.total = index, total
        self.header = f"run {run_id}: {cell_called(cell)} · repetition {repetition}"
        self.run_started_at = time.monotonic()
        self.notpm = self.dirty_pct = self.ckpt_mb = None
        self._refresh()

    def phase(self, text: str) -> None:
        self.phase_text = text
        self._refresh()

    def interval(self, record: Any) -> None:
        if record.interval_s:
            self.notpm = record.primary_count * 60.0 / record.interval_s
        self._refresh()

    def sample(self, record: Any) -> None:
        if record.pages_dirty is not None and record.pages_data is not None:
            free = record.pages_free or 0
            self.dirty_pct = 100.0 * record.pages_dirty / (1 + record.pages_data + free)
        if record.lsn is not None and record.checkpoint_lsn is not None:
            self.ckpt_mb = (record.lsn - record.checkpoint_lsn) / 2**20
        self._refresh()

    def run_finished(self, run_id: int, status: str, error: str | None) -> None:
        line = f"run {run_id} {status}" + (f": {error}" if error else "")
        self.finished.append((status, line))
        self.console.print(literal(line, style="green" if status == "done" else "red"))
        self._refresh()

    def _refresh(self) -> None:
        elapsed = time.monotonic() - self.started
        remaining_runs = max(self.total - self.index, 0)
        in_run = time.monotonic() - self.run_started_at
        eta = remaining_runs * self.run_seconds + max(self.run_seconds - in_run, 0)
        table = Table.grid(padding=(0, 2))
        table.add_row(
            Text(f"[{self.index}/{self.total}]", style="bold"),
            literal(self.header),
        )
        table.add_row(
            literal(self.phase_text, style="cyan"),
            Text(
                f"elapsed {format_duration(elapsed)} · ETA {format_duration(eta)}"
                + (f" · NOTPM {self.notpm:,.0f}" if self.notpm is not None else "")
                + (f" · dirty {self.dirty_pct:.1f}%" if self.dirty_pct is not None else "")
                + (f" · checkpoint age {self.ckpt_mb:.1f} MB" if self.ckpt_mb is not None else "")
            ),
        )
        self.live.update(Group(table))


def status_counters(blob: bytes | None) -> dict[str, float]:
    """Decompress a sample's ``status_z`` (for displays that want one more counter)."""
    if not blob:
        return {}
    return json.loads(zlib.decompress(blob))
