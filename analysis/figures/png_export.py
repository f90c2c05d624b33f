"""PNG export of a report's figures: a few kaleido renderers working side by side.

Each kaleido renderer is one headless Chromium process that draws one figure at a time
(≈ 50–100 ms for a line chart of a few hundred points). A report over 500 runs has ~85
figures, so drawing them one after another took longer than the whole HTML (issue 10). Here
one renderer per CPU (at most :data:`MAX_RENDERERS`) draws in a worker thread while the report
goes on building its HTML; the threads only move JSON and bytes, Chromium does the work.

Figures are serialized when they are submitted, so the caller may change a figure afterwards
(the report switches each figure to ``autosize`` for the HTML). The first failure (no
Chromium, a broken kaleido) stops the export: the report says why and keeps its HTML. A figure
drawn before at the same size comes from the PNG cache (:mod:`analysis.figures.png_cache`); a
renderer starts Chromium only for the first figure it has to draw.

The export has a time bound: when no figure is finished for :data:`STALL_SECONDS` while
figures wait (Chromium cannot start — under a memory limit it hangs instead of failing — or
hangs on a figure), or the export takes longer than :data:`DEADLINE_SECONDS` in all,
:meth:`PngExporter.close` stops its renderers (their Chromium processes are killed) and the
export fails with one sentence saying so; the caller keeps its HTML. Each PNG is written to a
new temporary file beside its name and renamed over it, so a link there is replaced, never
written through.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import plotly.graph_objects as go

from analysis.figures import png_cache

#: More renderers than this only add Chromium processes competing for the same cores.
MAX_RENDERERS = 4
#: The export stops when no figure is finished for this long while figures wait (Chromium
#: starts in 1–3 s and draws a figure in well under a second, even on a loaded machine).
STALL_SECONDS = 20.0
#: The export stops when waiting for it takes longer than this in all (a 500-run report's 85
#: figures take seconds).
DEADLINE_SECONDS = 600.0


@dataclass(frozen=True)
class _Job:
    figure: dict[str, Any]
    path: Path
    width: int
    height: int
    image_format: str = "png"
    scale: float = 1


def default_renderers() -> int:
    """One renderer per CPU this process may use, between 1 and :data:`MAX_RENDERERS`."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(MAX_RENDERERS, cpus))


def _new_scope() -> Any:
    """A kaleido scope drawing with plotly's own plotly.js (and kaleido's vendored MathJax)."""
    import plotly
    from kaleido.scopes.plotly import PlotlyScope

    plotlyjs = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    # The plotly.js of the plotly package, as plotly.io does: the PNG matches the HTML. Do not
    # pass mathjax=False: kaleido 0.2.1 then fails every figure ("Failed to serialize
    # document"); its default is the MathJax copy inside the kaleido wheel (no network).
    return PlotlyScope(plotlyjs=str(plotlyjs))


class PngExporter:
    """Write figures as PNG files in background renderers; ``close()`` waits for them all.

    Use as a context manager, or call :meth:`close` yourself; :attr:`error` is the first
    failure (``None`` when every PNG was written). ``stall_seconds`` and ``deadline_seconds``
    bound :meth:`close` (module docstring).
    """

    def __init__(self, renderers: int | None = None, *,
                 stall_seconds: float | None = None,
                 deadline_seconds: float | None = None) -> None:
        self.renderers = renderers if renderers is not None else default_renderers()
        self.stall_seconds = STALL_SECONDS if stall_seconds is None else stall_seconds
        self.deadline_seconds = DEADLINE_SECONDS if deadline_seconds is None \
            else deadline_seconds
        self.error: str | None = None
        self.written: list[Path] = []
        self._jobs: queue.Queue[_Job | None] = queue.Queue()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._scopes: list[Any] = []
        self._finished = 0  # figures done (drawn or failed): progress for the stall bound
        self._stopped = False

    def submit(self, fig: go.Figure | dict[str, Any], path: Path, *, width: int,
               height: int, image_format: str = "png", scale: float = 1) -> None:
        """Queue ``fig`` to be drawn at ``width`` × ``height`` into ``path`` (a PNG at scale 1
        unless ``image_format`` — ``png`` or ``svg`` — and ``scale`` say otherwise; only a
        PNG at scale 1, the report's, is cached).

        A figure is copied to a dict now; a dict (``fig.to_dict()``) is used as it is and must
        not change until :meth:`close`.
        """
        if self.error is not None:
            return
        if not self._threads:
            self._start()
        spec = fig if isinstance(fig, dict) else fig.to_dict()
        self._jobs.put(_Job(spec, path, int(width), int(height), image_format, scale))

    def close(self) -> str | None:
        """Wait for every queued figure and stop the renderers; return the first error.

        Waits at most :attr:`deadline_seconds`, and at most :attr:`stall_seconds` without a
        figure finished; then the renderers are stopped and :attr:`error` says so.
        """
        for _ in self._threads:
            self._jobs.put(None)
        start = last = time.monotonic()
        finished = self._finished
        while any(t.is_alive() for t in self._threads):
            next(t for t in self._threads if t.is_alive()).join(timeout=0.2)
            now = time.monotonic()
            if self._finished != finished:
                finished, last = self._finished, now
            if now - last > self.stall_seconds:
                self._stop(f"PNG export stopped: no figure was drawn in {self.stall_seconds:g} s"
                           " (kaleido's Chromium did not start or hangs; too little memory?)")
                break
            if now - start > self.deadline_seconds:
                self._stop(f"PNG export stopped after {self.deadline_seconds:g} s"
                           f" ({len(self.written)} figures drawn)")
                break
        if self._threads and not self._stopped:
            png_cache.prune()
        self._threads = []
        return self.error

    def cancel(self) -> None:
        """Drop the figures not drawn yet and stop the renderers (the caller failed and will
        use none of them): :meth:`close` without waiting for the queue."""
        with self._lock:
            self.error = self.error or "cancelled"
        self.close()

    def _stop(self, reason: str) -> None:
        """Fail the export with ``reason`` and kill every renderer's Chromium; a renderer
        still stuck after that is left behind (its thread is a daemon and writes nothing)."""
        with self._lock:
            self.error = reason
            self._stopped = True
        until = time.monotonic() + 5
        while any(t.is_alive() for t in self._threads) and time.monotonic() < until:
            with self._lock:
                scopes = list(self._scopes)
            for scope in scopes:  # again each round: a renderer may have been starting one
                _kill_scope(scope)
            for thread in self._threads:
                thread.join(timeout=0.1)

    def __enter__(self) -> PngExporter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _start(self) -> None:
        for n in range(self.renderers):
            thread = threading.Thread(target=self._work, name=f"png-{n}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def _work(self) -> None:
        scope = None
        try:
            while (job := self._jobs.get()) is not None:
                if self.error is not None:
                    continue  # drain: after a failure nothing more is drawn
                try:
                    # A figure drawn before, unchanged, comes from the PNG cache: no Chromium.
                    cached = png_cache.enabled() and (job.image_format, job.scale) == ("png", 1)
                    stored = png_cache.key(job.figure, job.width, job.height) if cached else None
                    image = png_cache.get(stored) if stored else None
                    if image is None:
                        if scope is None:
                            with warnings.catch_warnings():
                                # kaleido 0.2.1 calls Thread.setDaemon(), deprecated since 3.10.
                                warnings.simplefilter("ignore", DeprecationWarning)
                                scope = _new_scope()
                            with self._lock:
                                self._scopes.append(scope)
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore", DeprecationWarning)
                            image = scope.transform(job.figure, format=job.image_format,
                                                    width=job.width, height=job.height,
                                                    scale=job.scale)
                        if stored:
                            png_cache.put(stored, image)
                    if self._stopped:
                        continue  # stopped meanwhile: the caller has moved on
                    _write_new(job.path, image)
                    with self._lock:
                        self.written.append(job.path)
                except Exception as exc:  # Chromium missing or broken: the HTML still works
                    with self._lock:
                        if self.error is None:
                            self.error = f"{type(exc).__name__}: {exc}".strip()[:400]
                finally:
                    with self._lock:
                        self._finished += 1
        finally:
            if scope is not None:
                _close_scope(scope)


def _write_new(path: Path, data: bytes) -> None:
    """Write ``data`` to a new temporary file beside ``path``, then rename it over ``path``:
    a link at ``path`` is replaced, never written through, and no reader sees half a PNG."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".flushbench-", suffix=".part", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            os.fchmod(out.fileno(), 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _children(pid: int) -> list[int]:
    """``pid``'s child processes, those forked by any of its threads (Linux ``/proc``)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):
            found += map(int, (task / "children").read_text().split())
    return found


def _stopped_tree(pid: int) -> list[int]:
    """SIGSTOP ``pid``, then its children, then theirs; return every pid stopped.

    Stopping a process before reading its children closes the race a plain walk has: a
    launcher that forks its Chromium between the walk and the kill would leave that child
    running (the kernel retries a fork a pending signal interrupts, so a stopped parent's
    child list is final)."""
    found: list[int] = []
    todo = [pid]
    while todo and len(found) < 1000:
        parent = todo.pop()
        with contextlib.suppress(OSError):
            os.kill(parent, signal.SIGSTOP)
        found.append(parent)
        todo += _children(parent)
    return found


def _kill_scope(scope: Any) -> None:
    """SIGKILL a kaleido scope's process and its children (kaleido's launcher is a shell
    script whose Chromium is its child: killing the script alone would leave Chromium)."""
    proc = getattr(scope, "_proc", None)
    if proc is None or proc.poll() is not None:
        return
    for pid in _stopped_tree(proc.pid):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def _close_scope(scope: Any) -> None:
    """Stop a kaleido scope's Chromium and close its pipes (kaleido 0.2 leaves them open)."""
    proc = scope._proc  # noqa: SLF001 - kaleido 0.2 has no public close
    scope._shutdown_kaleido()  # noqa: SLF001
    if proc is None:
        return
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    reader = scope._std_error_thread  # noqa: SLF001
    if reader is not None:
        reader.join(timeout=5)  # it reads stderr until EOF, which the exit just gave it
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        if pipe is not None and not pipe.closed:
            pipe.close()
