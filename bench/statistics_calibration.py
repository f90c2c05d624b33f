"""Calibration tables of analysis.statistics: false-positive rates, coverage and power.

Prints the figures ``docs/statistics.md`` quotes, with more trials than the tests. Seeded:
the same machine and versions print the same tables.

    .venv/bin/python bench/statistics_calibration.py            # ~1-3 min on 2 shared cores
    .venv/bin/python bench/statistics_calibration.py --quick    # a quarter of the trials
"""

from __future__ import annotations

import argparse
import datetime as dt
import platform
import time

import numpy as np

from analysis.statistics.hypothesis_tests import mann_whitney
from analysis.statistics.intervals import mean_ci, ratio_ci
from analysis.statistics.oscillation import detect_oscillation
from analysis.statistics.power import runs_needed
from analysis.statistics.shape import describe_shape
from analysis.statistics.verdicts import FASTER, SLOWER, cv_to_log_sd, verdict

INTERVAL_S = 10.0


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
    """The rule analysis/stability.py shipped: peak bin ±1 holds ≥ 30 % and CV ≥ 3 %."""
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a quarter of the trials")
    parser.add_argument("--only", choices=("oscillation", "shape", "intervals", "verdicts"),
                        help="print one table group only")
    args = parser.parse_args()
    scale = 4 if args.quick else 1
    rng = np.random.default_rng(20110107)
    start = time.process_time()
    print(f"# analysis.statistics calibration — {dt.date.today()} — {platform.node()} "
          f"({platform.processor() or platform.machine()}, numpy {np.__version__})")
    groups = {"oscillation": (oscillation_tables, 2000), "shape": (shape_tables, 1000),
              "intervals": (interval_tables, 10000), "verdicts": (verdict_tables, 4000)}
    for name, (table, trials) in groups.items():
        if args.only in (None, name):
            table(rng, trials // scale)
    print(f"\nCPU {time.process_time() - start:.0f} s")


if __name__ == "__main__":
    main()
