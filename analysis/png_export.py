"""PNG export of a report's figures: a few kaleido renderers working side by side.

Each kaleido renderer is one headless Chromium process that draws one figure at a time
(≈ 50–100 ms for a line chart of a few hundred points). A report over 500 runs has ~85
figures, so drawing them one after another took longer than the whole HTML (issue 10). Here
one renderer per CPU (at most :data:`MAX_RENDERERS`) draws in a worker thread while the report
goes on building its HTML; the threads only move JSON and bytes, Chromium does the work.

Figures are serialized when they are submitted, so the caller may change a figure afterwards
(the report switches each figure to ``autosize`` for the HTML). The first failure (no
Chromium, a broken kaleido) stops the export: the report says why and keeps its HTML. A figure
drawn before at the same size comes from the PNG cache (:mod:`analysis.png_cache`); a renderer
starts Chromium only for the first figure it has to draw.
"""

from __future__ import annotations

import os
import queue
import threading
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import plotly.graph_objects as go

from analysis import png_cache

#: More renderers than this only add Chromium processes competing for the same cores.
MAX_RENDERERS = 4


@dataclass(frozen=True)
class _Job:
    figure: dict[str, Any]
    path: Path
    width: int
    height: int


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
    failure (``None`` when every PNG was written).
    """

    def __init__(self, renderers: int | None = None) -> None:
        self.renderers = renderers if renderers is not None else default_renderers()
        self.error: str | None = None
        self.written: list[Path] = []
        self._jobs: queue.Queue[_Job | None] = queue.Queue()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []

    def submit(self, fig: go.Figure | dict[str, Any], path: Path, *, width: int,
               height: int) -> None:
        """Queue ``fig`` to be drawn at ``width`` × ``height`` into ``path`` (scale 1).

        A figure is copied to a dict now; a dict (``fig.to_dict()``) is used as it is and must
        not change until :meth:`close`.
        """
        if self.error is not None:
            return
        if not self._threads:
            self._start()
        spec = fig if isinstance(fig, dict) else fig.to_dict()
        self._jobs.put(_Job(spec, path, int(width), int(height)))

    def close(self) -> str | None:
        """Wait for every queued figure and stop the renderers; return the first error."""
        for _ in self._threads:
            self._jobs.put(None)
        for thread in self._threads:
            thread.join()
        if self._threads:
            png_cache.prune()
        self._threads = []
        return self.error

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
                    stored = png_cache.key(job.figure, job.width, job.height) \
                        if png_cache.enabled() else None
                    image = png_cache.get(stored) if stored else None
                    if image is None:
                        if scope is None:
                            with warnings.catch_warnings():
                                # kaleido 0.2.1 calls Thread.setDaemon(), deprecated since 3.10.
                                warnings.simplefilter("ignore", DeprecationWarning)
                                scope = _new_scope()
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore", DeprecationWarning)
                            image = scope.transform(job.figure, format="png", width=job.width,
                                                    height=job.height, scale=1)
                        if stored:
                            png_cache.put(stored, image)
                    job.path.parent.mkdir(parents=True, exist_ok=True)
                    job.path.write_bytes(image)
                    with self._lock:
                        self.written.append(job.path)
                except Exception as exc:  # Chromium missing or broken: the HTML still works
                    with self._lock:
                        if self.error is None:
                            self.error = f"{type(exc).__name__}: {exc}".strip()[:400]
        finally:
            if scope is not None:
                _close_scope(scope)


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
