"""Calibration tables of analysis.statistics: false-positive rates, coverage and power.

Prints the figures ``docs/statistics.md`` quotes, with more trials than the tests. Seeded:
the same machine and versions print the same tables.

    .venv/bin/python bench/statistics_calibration.py            # ~1-3 min on 2 shared cores
    .venv/bin/python bench/statistics_calibration.py --quick    # a quarter of the trials
    .venv/bin/python bench/statistics_calibration.py --only blocked   # the blocked rule, ~10 min
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import math
import platform
import tempfile
import time
from pathlib import Path

import numpy as np

from analysis.comparisons import compare
from analysis.statistics.blocked import blocked_mde_pct
from analysis.statistics.blocked import fit as blocked_fit
from analysis.statistics.hypothesis_tests import mann_whitney
from analysis.statistics.intervals import mean_ci, ratio_ci
from analysis.statistics.oscillation import detect_oscillation
from analysis.statistics.power import runs_needed
from analysis.statistics.shape import describe_shape
from analysis.statistics.verdicts import (
    FASTER,
    SLOWER,
    Verdict,
    cv_to_log_sd,
    design_verdict,
    verdict,
)
from analysis.tables import frames
from store.db import upgrade
from store.migrate import sqlite_copy

INTERVAL_S = 10.0
ROOT = Path(__file__).resolve().parents[1]


def ar1(rng: np.random.Generator, n: int, phi: float) -> np.ndarray:
    e = rng.standard_normal(n)
    x = np.empty(n)
    x[0] = e[0]
    for i in range(1, n):
        x[i] = phi * x[i - 1] + np.sqrt(1 - phi * phi) * e[i]
    return x


def pct(x: float) -> str:
    return f"{100 * x:5.1f}%"


def oscillation_tables(rng: np.random.Generator, trials: int) -> None:
    print(f"\n## Oscillation detector ({trials} runs per cell, CV 5 % noise)")
    print("false-positive rate (flagged 'oscillates')")
    print(f"{'intervals':>10} {'white':>8} {'AR .5':>8} {'AR .8':>8} {'old rule':>9}")
    for n in (12, 18, 30, 45, 90):
        row = []
        old = 0
        for phi in (0.0, 0.5, 0.8):
            hits = 0
            for _ in range(trials):
                y = 1000 * (1 + 0.05 * ar1(rng, n, phi))
                hits += detect_oscillation(y, interval_s=INTERVAL_S,
                                           seed=int(rng.integers(2**31))).oscillates
                if phi == 0.0:
                    old += _old_rule(y)
            row.append(hits / trials)
        print(f"{n:>10} {pct(row[0]):>8} {pct(row[1]):>8} {pct(row[2]):>8} "
              f"{pct(old / trials):>9}")
    print("\ndetection of a sine with two cycles in the window (amplitude 10 %, noise 3 %),")
    print("at the right period ±15 %; and shapes wrongly flagged as periods")
    print(f"{'intervals':>10} {'2-cycle':>8} {'dip':>8} {'step':>8} {'bow':>8}")
    for n in (18, 30, 45, 90):
        t = np.arange(n) * INTERVAL_S
        period = n * INTERVAL_S / 2
        found = 0
        shapes = {"dip": 0, "step": 0, "bow": 0}
        for _ in range(trials):
            y = 1000 * (1 + 0.10 * np.sin(2 * np.pi * t / period + rng.uniform(0, 2 * np.pi))
                        + 0.03 * rng.standard_normal(n))
            o = detect_oscillation(y, t)
            found += o.oscillates and abs(o.period_s - period) / period < 0.15
            for kind in shapes:
                z = 1000 * (1 + 0.03 * rng.standard_normal(n))
                if kind == "dip":
                    w = max(2, n // 6)
                    s = int(rng.integers(0, n - w))
                    z[s:s + w] *= 0.7
                elif kind == "step":
                    z[int(rng.integers(n // 4, 3 * n // 4)):] *= 0.9
                else:
                    z *= 1 - 0.15 * np.sin(np.pi * t / t[-1])
                shapes[kind] += detect_oscillation(z, t).oscillates
        print(f"{n:>10} {pct(found / trials):>8} {pct(shapes['dip'] / trials):>8} "
              f"{pct(shapes['step'] / trials):>8} {pct(shapes['bow'] / trials):>8}")
    n = 60
    t = np.arange(n) * INTERVAL_S
    keep = np.arange(n) % 6 != 5
    ok = 0
    for _ in range(trials):
        y = 1000 * (1 + 0.10 * np.sin(2 * np.pi * t / 120 + rng.uniform(0, 2 * np.pi))
                    + 0.03 * rng.standard_normal(n))
        o = detect_oscillation(y[keep], t[keep])
        ok += o.oscillates and abs(o.period_s - 120) <= 6
    print(f"120 s sine, 60 intervals, every 6th missing: found at 120 ± 6 s in {pct(ok / trials)}")


def _old_rule(y: np.ndarray) -> bool:
    """The rule analysis/steadiness/stability.py shipped: peak bin ±1 holds ≥ 30 % and CV ≥ 3 %."""
    n = y.size
    idx = np.arange(n) - (n - 1) / 2
    resid = y - y.mean() - (idx @ (y - y.mean()) / (idx @ idx)) * idx
    power = np.abs(np.fft.rfft(resid)) ** 2
    power[1:] *= 2
    if n % 2 == 0:
        power[-1] /= 2
    total = power[1:].sum()
    if power.size <= 2 or total <= 0:
        return False
    k = 2 + int(np.argmax(power[2:]))
    share = power[max(1, k - 1): k + 2].sum() / total
    return bool(share >= 0.3 and 100 * y.std(ddof=1) / y.mean() >= 3)


def shape_tables(rng: np.random.Generator, trials: int) -> None:
    print(f"\n## Shape: false steps / trends on AR(1) noise, CV 5 % ({trials} runs per cell)")
    print(f"{'intervals':>10} {'φ':>4} {'step':>8} {'trend':>8}")
    for n in (18, 30, 90):
        for phi in (0.0, 0.5, 0.8):
            st = tr = 0
            for _ in range(trials // 2):
                f = describe_shape(1000 * (1 + 0.05 * ar1(rng, n, phi)),
                                   interval_s=INTERVAL_S).findings
                st += any(x.startswith("step") for x in f)
                tr += any(x.startswith("trend") for x in f)
            print(f"{n:>10} {phi:>4} {pct(st / (trials // 2)):>8} {pct(tr / (trials // 2)):>8}")


def interval_tables(rng: np.random.Generator, trials: int) -> None:
    print(f"\n## 95 % interval coverage ({trials} samples per cell)")
    print(f"{'noise':>16} {'n':>3} {'mean (Cox)':>11} {'ratio (Welch log)':>18} "
          f"{'pct bootstrap':>14}")
    for kind, s in (("normal", 0.05), ("normal", 0.20), ("lognormal", 0.10),
                    ("lognormal", 0.30), ("lognormal", 0.50)):
        for n in (3, 5, 10):
            if kind == "normal":
                a = np.abs(rng.normal(1000, 1000 * s, (trials, n)))
                b = 1.1 * np.abs(rng.normal(1000, 1000 * s, (trials, n)))
                true = 1000.0
            else:
                a = 1000 * np.exp(rng.normal(0, s, (trials, n)))
                b = 1.1 * 1000 * np.exp(rng.normal(0, s, (trials, n)))
                true = 1000 * np.exp(s * s / 2)
            cm = cr = cb = 0
            for ra, rb in zip(a, b, strict=True):
                m = mean_ci(ra)
                r = ratio_ci(ra, rb)
                cm += m.low <= true <= m.high
                cr += r.low <= 1.1 <= r.high
            # The percentile bootstrap the old code used, for comparison (1000 resamples).
            idx = rng.integers(0, n, size=(1000, n))
            for ra in a[: min(trials, 1000)]:
                means = ra[idx].mean(axis=1)
                lo, hi = np.percentile(means, [2.5, 97.5])
                cb += lo <= true <= hi
            print(f"{kind + f' {s:g}':>16} {n:>3} {pct(cm / trials):>11} {pct(cr / trials):>18} "
                  f"{pct(cb / min(trials, 1000)):>14}")


def verdict_tables(rng: np.random.Generator, trials: int) -> None:
    print(f"\n## Verdicts ({trials} comparisons per cell, lognormal noise)")
    print(f"{'CV':>4} {'n':>3} {'type I':>7} {'power +10%':>11} {'power +5%':>10} "
          f"{'MDE (median)':>13}")
    for cv in (0.03, 0.05, 0.10):
        s = np.sqrt(np.log1p(cv * cv))
        for n in (3, 4, 5, 10):
            fp = p10 = p5 = 0
            mdes = []
            for _ in range(trials):
                v = verdict(np.exp(rng.normal(0, s, n)), np.exp(rng.normal(0, s, n)))
                fp += v.verdict in (FASTER, SLOWER)
                mdes.append(v.mde_pct)
                p10 += verdict(np.exp(rng.normal(0, s, n)),
                               1.10 * np.exp(rng.normal(0, s, n))).verdict == FASTER
                p5 += verdict(np.exp(rng.normal(0, s, n)),
                              1.05 * np.exp(rng.normal(0, s, n))).verdict == FASTER
            mde = float(np.median(mdes))
            print(f"{100 * cv:>3.0f}% {n:>3} {pct(fp / trials):>7} {pct(p10 / trials):>11} "
                  f"{pct(p5 / trials):>10} {mde:>12.1f}%")
    # Power of the rule at its own stated MDE (is the MDE honest?).
    print("\npower of the verdict at the true shift = its median stated MDE (target 78-85 %)")
    for cv in (0.03, 0.10):
        s = np.sqrt(np.log1p(cv * cv))
        for n_a, n_b in ((3, 5), (4, 4), (5, 5), (10, 10)):
            mde = float(np.median([verdict(np.exp(rng.normal(0, s, n_a)),
                                           np.exp(rng.normal(0, s, n_b))).mde_pct
                                   for _ in range(2000)]))
            hits = sum(verdict(np.exp(rng.normal(0, s, n_a)),
                               (1 + mde / 100) * np.exp(rng.normal(0, s, n_b))).verdict == FASTER
                       for _ in range(trials))
            print(f"  CV {100 * cv:.0f}%, {n_a} vs {n_b}: MDE {mde:.1f}% → power "
                  f"{pct(hits / trials)}")
    print("\nruns per cell the power planner asks for (80 % power, both cells equal)")
    print(f"{'CV':>4} " + " ".join(f"{f'+{e}%':>6}" for e in (5, 10, 20, 33, 55)))
    for cv in (0.02, 0.03, 0.05, 0.10):
        need = [runs_needed(e, cv_to_log_sd(cv)) for e in (5, 10, 20, 33, 55)]
        print(f"{100 * cv:>3.0f}% " + " ".join(f"{n if n else '>50':>6}" for n in need))
    print("\nexact Mann-Whitney vs scipy's default where values tie: "
          f"1,2,2,3 vs 2,3,4,5 → exact p = {mann_whitney([1, 2, 2, 3], [2, 3, 4, 5]).p_value:.3f}")


# --- blocked designs: the cell + block model through design_verdict --------------------------

#: The blocked tables' own seed: the same figures with or without ``--only blocked``.
BLOCKED_SEED = 20111205
BLOCK_COUNTS = (3, 4, 5, 6, 8)
BLOCKED_CVS = (0.025, 0.05, 0.10)
CELL_COUNTS = (2, 6, 12)
#: Block SD as a multiple of the run-to-run SD.
BLOCK_SD_RATIOS = (0.0, 1.0, 3.0)
#: The committed studies whose runs the recorded A/A resamples.
RECORDED_STUDIES = ("stability-2011-flash", "stability-2011")


def _called(v: Verdict) -> bool:
    return v.verdict in (FASTER, SLOWER)


def _t_alone(v: Verdict) -> bool:
    """The model's t test of the contrast without the guard (p < 0.05: the interval is off 1)."""
    return math.isfinite(v.p_value) and v.p_value < 0.05


def balanced_blocks(n_cells: int, n_blocks: int) -> tuple[list[int], list[int]]:
    """Cell and block of each run: every cell once per block, block by block."""
    return ([c for _ in range(n_blocks) for c in range(n_cells)],
            [b for b in range(n_blocks) for _ in range(n_cells)])


def blocked_experiment(rng: np.random.Generator, n_cells: int, n_blocks: int, cv: float,
                       block_ratio: float, *, shift: float = 1.0,
                       cell_cvs: list[float] | None = None) -> np.ndarray:
    """One balanced experiment's throughput, in the order of :func:`balanced_blocks`.

    Lognormal run-to-run noise of ``cv`` (``cell_cvs``: one CV per cell); each block multiplies
    all its cells by exp(N(0, (block_ratio · σ)²)); cell 1 is multiplied by ``shift``.
    """
    sd = cv_to_log_sd(cv)
    cell_sd = sd if cell_cvs is None else np.array([cv_to_log_sd(c) for c in cell_cvs])
    log = cell_sd * rng.standard_normal((n_blocks, n_cells))
    log += block_ratio * sd * rng.standard_normal((n_blocks, 1))
    log[:, 1] += math.log(shift)
    return 1000.0 * np.exp(log).ravel()


def _markdown_header(first: str, columns: list[str]) -> None:
    print(f"| {first} | " + " | ".join(columns) + " |")
    print("|---" * (len(columns) + 1) + "|")


def blocked_type_one_tables(rng: np.random.Generator, trials: int
                            ) -> dict[tuple[int, int, float], float]:
    """A/A with block effects: how often design_verdict says "faster" or "slower".

    Returns the median MDE the verdict states, per (cells, blocks, CV).
    """
    print(f"\n## Blocked designs: type I error of design_verdict on A/A ({trials} experiments"
          " per figure)")
    print("\nLognormal run noise, one run per cell per block, cell 1 against cell 0; each entry"
          " is block SD 0 / 1× / 3× the run-to-run SD.")
    stated: dict[tuple[int, int, float], list[float]] = {}
    for n_cells in CELL_COUNTS:
        print(f"\n{n_cells} cells\n")
        _markdown_header("blocks", [f"CV {100 * cv:g} %" for cv in BLOCKED_CVS]
                         + ["all nine", "t test alone (all nine)"])
        for n_blocks in BLOCK_COUNTS:
            cells, blocks = balanced_blocks(n_cells, n_blocks)
            entries, called, alone = [], 0, 0
            for cv in BLOCKED_CVS:
                rates = []
                for ratio in BLOCK_SD_RATIOS:
                    hits = 0
                    for _ in range(trials):
                        v = design_verdict(blocked_experiment(rng, n_cells, n_blocks, cv, ratio),
                                           cells, blocks, 0, 1)
                        hits += _called(v)
                        alone += _t_alone(v)
                        stated.setdefault((n_cells, n_blocks, cv), []).append(v.mde_pct)
                    rates.append(hits / trials)
                    called += hits
                entries.append(" / ".join(f"{100 * r:.1f}" for r in rates) + " %")
            total = trials * len(BLOCKED_CVS) * len(BLOCK_SD_RATIOS)
            print(f"| {n_blocks} | " + " | ".join(entries)
                  + f" | {100 * called / total:.2f} % | {100 * alone / total:.2f} % |")
    return {key: float(np.median(v)) for key, v in stated.items()}


def _share_faster(rng: np.random.Generator, trials: int, n_cells: int, n_blocks: int,
                  cv: float, shift: float) -> float:
    cells, blocks = balanced_blocks(n_cells, n_blocks)
    hits = sum(design_verdict(blocked_experiment(rng, n_cells, n_blocks, cv, 1.0, shift=shift),
                              cells, blocks, 0, 1).verdict == FASTER for _ in range(trials))
    return hits / trials


def blocked_power_tables(rng: np.random.Generator, trials: int,
                         stated: dict[tuple[int, int, float], float]) -> None:
    """Power of design_verdict ("faster") at +5 % and +10 %, and the MDE it states."""
    print(f"\n## Blocked designs: power of design_verdict, block SD 1× ({trials} experiments"
          " per figure)")
    print("\nEach entry: says \"faster\" at a true +5 % / +10 % · the median MDE the verdict"
          " states on the A/A data above.")
    for n_cells in CELL_COUNTS:
        print(f"\n{n_cells} cells\n")
        _markdown_header("blocks", [f"CV {100 * cv:g} %" for cv in BLOCKED_CVS])
        for n_blocks in BLOCK_COUNTS:
            entries = []
            for cv in BLOCKED_CVS:
                p5, p10 = (_share_faster(rng, trials, n_cells, n_blocks, cv, shift)
                           for shift in (1.05, 1.10))
                mde = stated[(n_cells, n_blocks, cv)]
                entries.append(f"{100 * p5:.0f} / {100 * p10:.0f} % · {mde:.1f} %")
            print(f"| {n_blocks} | " + " | ".join(entries) + " |")


def blocked_mde_check(rng: np.random.Generator, trials: int,
                      stated: dict[tuple[int, int, float], float]) -> None:
    """Is the stated MDE honest? design_verdict at a true shift equal to it."""
    cv = 0.05
    print(f"\n## Blocked designs: design_verdict at a true shift equal to the MDE (CV {cv:.0%},"
          f" block SD 1×, {trials} experiments per figure; target 80 %)")
    print("\nThe rule is invariant to the scale of log values, so another CV gives the same"
          " powers.\n")
    _markdown_header("cells × blocks", ["MDE at the true σ (blocked_mde_pct)", "says faster",
                                        "median stated MDE", "says faster"])
    for n_cells in (2, 12):
        for n_blocks in BLOCK_COUNTS:
            true_mde = blocked_mde_pct(n_cells, n_blocks, cv_to_log_sd(cv))
            median_stated = stated[(n_cells, n_blocks, cv)]
            figures = []
            for mde in (true_mde, median_stated):
                power = (_share_faster(rng, trials, n_cells, n_blocks, cv, 1 + mde / 100)
                         if math.isfinite(mde) else math.nan)
                figures += [f"{mde:.1f} %", f"{100 * power:.1f} %"]
            print(f"| {n_cells} × {n_blocks} | " + " | ".join(figures) + " |")
    # The guard changes with the blocks (leave-one-block-out below 6, the rank test from 6 on):
    # the MDE by blocks shows what that costs.
    by_blocks = ", ".join(f"{n}: {blocked_mde_pct(12, n, cv_to_log_sd(cv)):.1f} %"
                          for n in range(3, 13))
    print(f"\nMDE at the true σ by blocks, 12 cells, CV {cv:.0%} (blocked_mde_pct): {by_blocks}")


def blocked_heteroscedastic_table(rng: np.random.Generator, trials: int) -> None:
    """A/A with one noisy cell (3× the CV) beside quiet ones: the pooled σ assumes one level."""
    quiet, noisy = 0.05, 0.15
    print(f"\n## Blocked designs: one noisy cell — A/A type I ({trials} experiments per line)")
    print(f"\nCell 1 at CV {noisy:.0%}, every other cell at CV {quiet:.0%}, block SD 1× the quiet"
          " SD. Noisy pair: cell 1 against cell 0; quiet pair: cell 2 against cell 0.\n")
    _markdown_header("cells × blocks", ["noisy pair: design_verdict", "t test alone",
                                        "quiet pair: design_verdict", "t test alone"])
    for n_cells in CELL_COUNTS:
        cvs = [quiet] * n_cells
        cvs[1] = noisy
        for n_blocks in BLOCK_COUNTS:
            cells, blocks = balanced_blocks(n_cells, n_blocks)
            counts = np.zeros(4)
            for _ in range(trials):
                y = blocked_experiment(rng, n_cells, n_blocks, quiet, 1.0, cell_cvs=cvs)
                v = design_verdict(y, cells, blocks, 0, 1)
                counts[:2] += (_called(v), _t_alone(v))
                if n_cells > 2:
                    v = design_verdict(y, cells, blocks, 0, 2)
                    counts[2:] += (_called(v), _t_alone(v))
            shares = [f"{100 * c / trials:.1f} %" for c in counts]
            if n_cells == 2:
                shares[2:] = ["—", "—"]
            print(f"| {n_cells} × {n_blocks} | " + " | ".join(shares) + " |")


def study_runs(name: str, folder: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, str]:
    """A committed study's counted runs, read from a private copy made in ``folder``.

    Returns (log NOTPM, cell, block, what a block is). The committed file is only read
    through SQLite's backup API: opening it in place would switch it to WAL. An interleaved
    study has no blocks in its design; its repetitions are rounds of every cell, taken as
    blocks here.
    """
    copy = folder / f"{name}.sqlite"
    sqlite_copy(ROOT / "docs" / "study-2011" / f"{name}.sqlite", copy)
    upgrade(copy, i_have_a_backup=True)
    fr = frames.load(str(copy))
    runs = compare.counted_runs(fr.run_summary)
    blocks, unit = compare.design_blocks(fr.run_summary, fr.experiment["stored"].spec)
    if blocks is None:
        blocks, unit = "round " + fr.run_summary["repetition"].astype(int).astype(str), "round"
    notpm = runs["notpm"].to_numpy(dtype=float)
    ok = np.isfinite(notpm) & (notpm > 0)
    return (np.log(notpm[ok]), runs["cell_id"].to_numpy(dtype=int)[ok],
            blocks.reindex(runs.index).to_numpy(dtype=object)[ok], unit)


def additive_fit(log_y: np.ndarray, cells: np.ndarray, blocks: np.ndarray
                 ) -> tuple[dict[int, float], dict[object, float], np.ndarray]:
    """The cell + block least-squares fit (as ``blocked.fit``) with what a resampling needs.

    Returns each cell's mean, each block's effect (the first block 0) and each run's
    modified residual r / sqrt(1 − h), whose variance is the run-to-run σ² (a raw residual's
    is σ²(1 − h): the fit has absorbed part of it).
    """
    cell_levels, block_levels = list(dict.fromkeys(cells)), list(dict.fromkeys(blocks))
    k = len(cell_levels)
    x = np.zeros((log_y.size, k + len(block_levels) - 1))
    for row, (c, b) in enumerate(zip(cells, blocks, strict=True)):
        x[row, cell_levels.index(c)] = 1.0
        if b != block_levels[0]:
            x[row, k + block_levels.index(b) - 1] = 1.0
    pinv = np.linalg.pinv(x)
    beta = pinv @ log_y
    resid = log_y - x @ beta
    keep = 1.0 - np.einsum("ij,ji->i", x, pinv)
    modified = np.where(keep > 1e-9, resid / np.sqrt(np.clip(keep, 1e-9, None)), 0.0)
    block_effect = {block_levels[0]: 0.0}
    block_effect.update({b: float(beta[k + i]) for i, b in enumerate(block_levels[1:])})
    return dict(zip(cell_levels, map(float, beta[:k]), strict=True)), block_effect, modified


def recorded_aa(rng: np.random.Generator, name: str, folder: Path, perms: int) -> str:
    """Residual-permutation A/A on a study's runs: one markdown row.

    For every pair of real cells (a, b), ``perms`` times: both cells get cell a's fitted
    values (its mean plus the real effect of each block they ran in) plus their own modified
    residuals, permuted over their runs and with random signs. The null is true, each cell
    keeps its own noise, the other cells and the round effects stay as recorded. The signs
    matter: a cell's residuals sum to zero, so a permutation alone would give the contrast
    exactly a's fitted mean again, and a's real values alone beside it would carry no noise.
    """
    log_y, cells, blocks, unit = study_runs(name, folder)
    cell_mean, block_effect, noise = additive_fit(log_y, cells, blocks)
    offsets = np.array([block_effect[b] for b in blocks])
    cell_list, block_list = list(cells), list(blocks)
    pairs = list(itertools.combinations(cell_mean, 2))
    per_pair, alone = [], 0
    for a, b in pairs:
        hits = 0
        for _ in range(perms):
            y = log_y.copy()
            for cell in (a, b):
                idx = np.flatnonzero(cells == cell)
                signs = rng.choice((-1.0, 1.0), idx.size)
                y[idx] = cell_mean[a] + offsets[idx] + signs * noise[idx][rng.permutation(idx.size)]
            v = design_verdict(np.exp(y), cell_list, block_list, a, b, block_unit=unit)
            hits += _called(v)
            alone += _t_alone(v)
        per_pair.append(hits / perms)
    total = perms * len(pairs)
    worst = int(np.argmax(per_pair))
    sigma = blocked_fit(log_y, cell_list, block_list).sigma
    return (f"| {name} | {len(cell_mean)} cells, {len(set(block_list))} {unit}s, {log_y.size} runs"
            f" | {100 * sigma:.1f} % | {len(pairs)} × {perms} | {100 * np.mean(per_pair):.2f} %"
            f" | {100 * alone / total:.2f} % | {100 * per_pair[worst]:.0f} %"
            f" (C{pairs[worst][0]} vs C{pairs[worst][1]}) |")


def blocked_recorded_tables(rng: np.random.Generator, perms: int) -> None:
    """The residual-permutation A/A on the committed studies' databases (private copies)."""
    print(f"\n## Blocked designs: recorded A/A — residual permutation with random signs,"
          f" {perms} per pair of real cells\n")
    _markdown_header("study", ["runs", "pooled σ (log)", "pairs × resamplings",
                               "design_verdict type I", "t test alone", "worst pair"])
    with tempfile.TemporaryDirectory(prefix="flushbench-calibration-") as folder:
        for name in RECORDED_STUDIES:
            print(recorded_aa(rng, name, Path(folder), perms))


def blocked_tables(_rng: np.random.Generator, trials: int) -> None:
    """Every table of the blocked rule (seeded on their own: ``BLOCKED_SEED``)."""
    rng = np.random.default_rng(BLOCKED_SEED)
    stated = blocked_type_one_tables(rng, trials)
    blocked_power_tables(rng, trials // 2, stated)
    blocked_mde_check(rng, trials, stated)
    blocked_heteroscedastic_table(rng, trials)
    blocked_recorded_tables(rng, max(10, trials // 10))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a quarter of the trials")
    parser.add_argument("--only", choices=("oscillation", "shape", "intervals", "verdicts",
                                               "blocked"),
                        help="print one table group only")
    args = parser.parse_args()
    scale = 4 if args.quick else 1
    rng = np.random.default_rng(20110107)
    start = time.process_time()
    print(f"# analysis.statistics calibration — {dt.date.today()} — {platform.node()} "
          f"({platform.processor() or platform.machine()}, numpy {np.__version__})")
    groups = {"oscillation": (oscillation_tables, 2000), "shape": (shape_tables, 1000),
              "intervals": (interval_tables, 10000), "verdicts": (verdict_tables, 4000),
              "blocked": (blocked_tables, 1000)}
    for name, (table, trials) in groups.items():
        if args.only in (None, name):
            table(rng, trials // scale)
    print(f"\nCPU {time.process_time() - start:.0f} s")


if __name__ == "__main__":
    main()
