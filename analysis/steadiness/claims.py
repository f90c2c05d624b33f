"""Sentences about runs, computed from the data — with the exceptions named.

A study's write-up said "every run of every row is noisy" when three runs were not, and
"every run pushed the group's write rate to the limit" when five did not. Here each claim is
counted, never written by hand: a :class:`Claim` holds how many runs it holds for, of how
many, and the runs it does not hold for, with their figures, and renders itself as one
sentence ("23 of 26 runs are noisy (CV ≥ 10 %); not: run 14 (4.4 %), …").
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from analysis.reading.query import DB, session_scope, storage_evidence
from store.models import RunStatus

#: Run-to-run noise at which a run is called noisy (the stability score's flag).
NOISY_CV_PCT = 10.0
#: A throttled run "reached" its write limit when it did at least this share of it (the
#: throttle's own accuracy, docs/storage.md, is ±10 %).
LIMIT_SHARE = 0.90
#: A run "reached the maximum checkpoint age" when a window sample came this close (%).
MAX_AGE_PCT = 99.0


@dataclass(frozen=True)
class Claim:
    """One statement about a set of runs, the runs it holds for and those it is false for.

    ``statement`` is the verb phrase for one run ("is noisy"), ``plural`` for several
    ("are noisy").
    """

    statement: str
    plural: str
    holds: int
    total: int
    exceptions: list[str] = field(default_factory=list)
    holders: list[str] = field(default_factory=list)

    @property
    def universal(self) -> bool:
        """True when it holds for every run (and there is at least one)."""
        return self.total > 0 and self.holds == self.total

    def sentence(self) -> str:
        """``every run …`` / ``N of M runs …; not: …`` / ``no run …``."""
        if self.total == 0:
            return f"no run to judge whether it {self.statement}"
        if self.universal:
            return f"every run {self.statement} ({self.total} of {self.total})"
        if self.holds == 0:
            return f"no run {self.statement} (0 of {self.total})"
        head = f"{self.holds} of {self.total} runs {self.plural}"
        # Name the shorter list: the few runs it holds for, or the few it does not.
        if self.holders and len(self.holders) < len(self.exceptions):
            return f"{head}: " + ", ".join(self.holders)
        return f"{head}; not: " + ", ".join(self.exceptions)


def _done(run_summary: pd.DataFrame) -> pd.DataFrame:
    done = run_summary[run_summary["status"] == RunStatus.DONE]
    if "superseded" in done:
        done = done[~done["superseded"].astype(bool)]
    return done.sort_values("run_id")


def noisy_runs(run_summary: pd.DataFrame, *, threshold: float = NOISY_CV_PCT) -> Claim:
    """Runs whose throughput CV over the window is at least ``threshold`` %."""
    done = _done(run_summary)
    done = done[done["cv_pct"].notna()]
    quiet = done[done["cv_pct"] < threshold]
    noisy = done[done["cv_pct"] >= threshold]
    return Claim(f"is noisy (CV ≥ {threshold:g} %)", f"are noisy (CV ≥ {threshold:g} %)",
                 len(noisy), len(done),
                 [f"run {int(r.run_id)} ({r.cv_pct:.1f} %)" for r in quiet.itertuples()],
                 [f"run {int(r.run_id)} ({r.cv_pct:.1f} %)" for r in noisy.itertuples()])


def _storage_evidence(db: DB, run_ids: list[int]) -> dict[int, dict]:
    with session_scope(db) as s:
        rows = storage_evidence(s, run_ids)
    out = {}
    for run_id, evidence in rows:
        try:
            out[int(run_id)] = json.loads(evidence) if isinstance(evidence, str) else {}
        except ValueError:
            continue
    return out


#: A write limit in run metadata → the storage proof's measured rate of it, and its unit.
_WRITE_LIMITS = {"storage_write_iops": ("io_write_iops", "IOPS"),
                 "storage_write_bandwidth": ("io_write_bps", "MiB/s")}


def _rate(value: float, unit: str) -> str:
    return f"{value / 2**20:,.1f}" if unit == "MiB/s" else f"{value:,.0f}"


def reached_write_limit(db: DB, run_summary: pd.DataFrame, *,
                        share: float = LIMIT_SHARE) -> Claim:
    """Throttled runs whose measured write rate came within ``share`` of a write limit.

    Write IOPS and write bandwidth both count (a flash card's limit is bytes, a disk's
    operations): a run with both is judged, and named, by the one it came closest to.
    """
    done = _done(run_summary)
    limits: dict[int, dict[str, float]] = {}
    for r in done.itertuples():
        extra = getattr(r, "extra", None)
        if isinstance(extra, dict):
            run_limits = {k: float(extra[k]) for k in _WRITE_LIMITS if extra.get(k)}
            if run_limits:
                limits[int(r.run_id)] = run_limits
    evidence = _storage_evidence(db, list(limits))
    missed, hit = [], []
    for run_id, run_limits in sorted(limits.items()):
        closest: tuple[float, str] | None = None
        for key, limit in run_limits.items():
            measured_key, unit = _WRITE_LIMITS[key]
            measured = evidence.get(run_id, {}).get(measured_key)
            if measured is None or not math.isfinite(float(measured)):
                continue
            text = f"run {run_id} ({_rate(float(measured), unit)} of {_rate(limit, unit)} {unit})"
            if closest is None or float(measured) / limit > closest[0]:
                closest = (float(measured) / limit, text)
        if closest is not None:
            (missed if closest[0] < share else hit).append(closest[1])
    return Claim(f"pushed its write rate to the limit (≥ {share:.0%} of it)",
                 f"pushed their write rate to the limit (≥ {share:.0%} of it)",
                 len(hit), len(hit) + len(missed), missed, hit)


def checkpoint_age_peaks(samples: pd.DataFrame) -> pd.Series:
    """Per run (index: run id), the highest checkpoint age in the window, as % of its maximum
    (runs without a window sample that has one are absent)."""
    window = samples[samples["in_window"] & samples["checkpoint_age_pct"].notna()]
    return window.groupby("run_id")["checkpoint_age_pct"].max()


def reached_max_checkpoint_age(peaks: pd.Series, run_ids: list[int], *,
                               level: float = MAX_AGE_PCT) -> Claim:
    """Runs whose window came within ``level`` % of the maximum checkpoint age.

    ``peaks``: :func:`checkpoint_age_peaks` (or the same figures from
    :mod:`analysis.writes.run_digest`); a run without a peak (NaN or absent) is not judged.
    """
    peaks = peaks.dropna()
    judged = [r for r in sorted(run_ids) if r in peaks.index]
    below = [f"run {r} (peak {peaks[r]:.0f} %)" for r in judged if peaks[r] < level]
    reached = [f"run {r} (peak {peaks[r]:.0f} %)" for r in judged if peaks[r] >= level]
    what = f"reached the maximum checkpoint age (≥ {level:g} % of it in the window)"
    return Claim(what, what, len(reached), len(judged), below, reached)


def not_steady_runs(run_summary: pd.DataFrame) -> Claim:
    """Done runs whose checkpoint age or dirty share still trends across the window.

    Reads the ``not_steady`` and trend columns :func:`analysis.tables.summaries.with_not_steady`
    adds to a run summary; a run without them (no window sample) is not judged.
    """
    done = _done(run_summary)
    texts = done["not_steady"] if "not_steady" in done else pd.Series(None, index=done.index)
    judged = done[texts.map(lambda v: isinstance(v, str)).astype(bool)]
    flagged = judged[texts[judged.index] != ""]
    steady = judged[texts[judged.index] == ""]
    what = "in checkpoint age or dirty pages across the window (not at steady state)"
    return Claim(f"still trends {what}", f"still trend {what}", len(flagged), len(judged),
                 [f"run {int(r)}" for r in steady["run_id"]],
                 [f"run {int(r.run_id)} ({_trend_figures(r)})" for r in flagged.itertuples()])


def phase_sensitive_runs(cycles: dict[int, Any], run_ids: list[int]) -> Claim:
    """Done runs whose throughput cycles and whose window holds a non-whole number of cycles
    (``cycles``: :func:`analysis.reading.window_cycles.run_cycles`), each named with its period and
    the range of its window mean over window starts."""
    judged = [r for r in run_ids if r in cycles]
    held = [r for r in judged if cycles[r].phase_sensitive]
    what = "holds a non-whole number of flush cycles in its window (the phase moves its mean)"
    return Claim(what, what.replace("holds", "hold").replace("its", "their", 1), len(held),
                 len(judged), [f"run {r}" for r in judged if r not in held],
                 [f"run {r} ({cycles[r].throughput.period_s:.0f} s, {cycles[r].cycles:.1f}"
                  f" cycles; {cycles[r].mean_low:,.0f}–{cycles[r].mean_high:,.0f} over window"
                  " starts)" for r in held])


def _trend_figures(run: Any) -> str:
    """``checkpoint age +23.7 MiB/min``: the slope of each level a run's warning names."""
    levels = str(run.not_steady_levels or "").split(", ")
    parts = []
    if "checkpoint age" in levels:
        parts.append(f"checkpoint age {run.checkpoint_age_trend_mib_per_min:+.1f} MiB/min")
    if "dirty pages" in levels:
        parts.append(f"dirty pages {run.dirty_trend_points_per_min:+.1f} points/min")
    return ", ".join(parts)


#: A kind of run warning named run by run up to this many runs; beyond it, as run ids.
_WARNING_DETAIL_RUNS = 5


def id_ranges(ids: list[int]) -> str:
    """``1–12, 14, 16–18``: sorted run ids with consecutive stretches joined."""
    parts = []
    # In a consecutive stretch, id minus its position in the sorted list is constant.
    for _, stretch in itertools.groupby(enumerate(sorted(ids)), key=lambda p: p[1] - p[0]):
        first, *rest = [i for _, i in stretch]
        parts.append(f"{first}–{rest[-1]}" if rest else str(first))
    return ", ".join(parts)


#: How a run's warnings are joined into one text (``analysis.reading.query``,
#: ``analysis.tables.summaries``).
WARNING_SEPARATOR = "; "


def split_warnings(text: str) -> list[str]:
    """A run's joined warnings, one per item.

    Split at ``"; "`` outside parentheses only: a warning's own figures in parentheses may
    hold ``;`` (``(MSER-5: throughput never settles; cut 300 s …)`` as stored by earlier
    versions), and splitting there made four lines of one warning.
    """
    items, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth <= 0 and text.startswith(WARNING_SEPARATOR, i):
            items.append(text[start:i])
            start, depth = i + len(WARNING_SEPARATOR), 0
    items.append(text[start:])
    return [item for item in items if item]


def run_warnings_by_kind(done: pd.DataFrame) -> list[str]:
    """The finished runs' own warnings, one line per kind instead of one per run.

    A run's ``warnings`` is ``"noisy: CV 12.3% ≥ 10%; oscillates: …"``; its kind is the text
    before the first colon. A study of 52 runs printed 50 near-identical lines (each with a
    130-character row label) after its scorecard; now ``noisy: 47 of 52 runs (runs 1–12, …)``,
    and a rare kind keeps each run's detail: ``step: 2 of 52 runs: run 7 (+12.3% at 200 s …)``.
    """
    total = len(done)
    by_kind: dict[str, list[tuple[int, str]]] = {}
    for run_id, text in zip(done["run_id"], done["warnings"].fillna(""), strict=True):
        for warning in split_warnings(str(text)):
            kind, _, detail = warning.partition(": ")
            by_kind.setdefault(kind, []).append((int(run_id), detail))
    lines = []
    for kind, runs in by_kind.items():
        head = f"{kind}: {len(runs)} of {total} run{'s' if total != 1 else ''}"
        if len(runs) <= _WARNING_DETAIL_RUNS:
            lines.append(head + ": " + ", ".join(
                f"run {r} ({d})" if d else f"run {r}" for r, d in sorted(runs)))
        else:
            lines.append(f"{head} (runs {id_ranges([r for r, _ in runs])}; one run in "
                         "full: `flushbench show RUN`)")
    return lines
