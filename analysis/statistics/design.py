"""Which knob effects can a set of cells tell apart? Effects only where the design identifies them.

An ``include:`` list where knobs move together (the 2011 study changes several settings per
cell) identifies no per-knob effect at all: any difference between cells could belong to
either knob. The test is the linear-model one (an effect is *estimable* when its contrasts
are functions of the cell means, Searle 1971): with dummy (treatment) coding of every
varying knob,

- the **main effect** of K is estimable when adding K's columns to the model of all other
  main effects raises the rank by ``levels(K) − 1``; otherwise it is *confounded* with the
  knobs whose columns overlap K's (named, pair by pair). In a resolution-III fraction a main
  effect can be estimable only *assuming no interaction* of two other knobs; that is said;
- the **two-way interaction** A×B is estimable when both main effects are and the A×B
  columns raise the rank of the main-effects model by ``(levels(A) − 1)(levels(B) − 1)``
  (every A×B combination present and not aliased with a third knob).

A full factorial over the knobs passes every test; a balanced fraction passes for the
effects it was built to estimate. Effects are fitted by least squares on log NOTPM per run
(so an effect is a ratio); estimable contrasts do not depend on the generalized inverse used.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.statistics.probability import f_sf, t_ppf, t_sf

#: Coverage of effect intervals.
LEVEL = 0.95
#: How an interaction that fails because one of its knobs has no estimable main effect is
#: described (``flushbench compare`` counts these instead of listing them).
NO_MAIN_EFFECT = "not estimable: no estimable main effect of "


@dataclass(frozen=True)
class Estimability:
    """Whether one term (a main effect or a two-way interaction) is identified by the design."""

    term: str
    knobs: tuple[str, ...]
    estimable: bool
    reason: str


def _key(value: object) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _levels(column: pd.Series) -> list[str]:
    seen: dict[str, None] = {}
    for v in column:
        seen.setdefault(_key(v), None)
    return list(seen)


def _dummies(column: pd.Series, levels: list[str]) -> np.ndarray:
    """Treatment coding: one 0/1 column per non-reference level (reference = first level)."""
    keys = column.map(_key).to_numpy()
    return np.column_stack([(keys == lv).astype(float) for lv in levels[1:]]) if len(
        levels) > 1 else np.zeros((len(column), 0))


def _interaction(xa: np.ndarray, xb: np.ndarray) -> np.ndarray:
    if xa.shape[1] == 0 or xb.shape[1] == 0:
        return np.zeros((xa.shape[0], 0))
    return np.column_stack([xa[:, i] * xb[:, j] for i in range(xa.shape[1])
                            for j in range(xb.shape[1])])


def _rank(*blocks: np.ndarray) -> int:
    x = np.column_stack(blocks)
    return int(np.linalg.matrix_rank(x)) if x.size else 0


def varying(cells: pd.DataFrame, knobs: Sequence[str]) -> list[str]:
    """The knobs that take more than one level among the cells."""
    return [k for k in knobs if len(_levels(cells[k])) > 1]


def _main_columns(cells: pd.DataFrame, knobs: Sequence[str]) -> dict[str, np.ndarray]:
    return {k: _dummies(cells[k], _levels(cells[k])) for k in knobs}


def estimability(cells: pd.DataFrame, knobs: Sequence[str]) -> list[Estimability]:
    """Estimability of every main effect and two-way interaction of the varying knobs.

    Parameters
    ----------
    cells:
        One row per cell (repetitions do not matter for estimability), one column per knob.
    knobs:
        Knob columns to consider; those with a single level are ignored.

    Returns
    -------
    list of Estimability
        Main effects first, then interactions; ``reason`` is ``"estimable"``,
        ``"estimable assuming no X×Y interaction"`` or ``"not estimable: …"``.
    """
    names = varying(cells, knobs)
    one = np.ones((len(cells), 1))
    cols = _main_columns(cells, names)
    out: list[Estimability] = []
    main_ok: dict[str, bool] = {}
    for k in names:
        others = [cols[j] for j in names if j != k]
        gain = _rank(one, *others, cols[k]) - _rank(one, *others)
        if gain == cols[k].shape[1]:
            aliased = [
                f"{a}×{b}" for a, b in itertools.combinations([j for j in names if j != k], 2)
                if _rank(one, *others, _interaction(cols[a], cols[b]), cols[k])
                - _rank(one, *others, _interaction(cols[a], cols[b])) < cols[k].shape[1]
            ]
            reason = ("estimable" if not aliased else
                      "estimable assuming no " + ", ".join(aliased) + " interaction")
            main_ok[k] = True
            out.append(Estimability(k, (k,), True, reason))
            continue
        partners = [j for j in names if j != k and _rank(one, cols[k], cols[j])
                    < 1 + cols[k].shape[1] + cols[j].shape[1]]
        if not partners:
            partners = [j for j in names if j != k]
            what = "a combination of " + ", ".join(partners)
        else:
            what = ", ".join(partners)
        main_ok[k] = False
        out.append(Estimability(k, (k,), False, f"not estimable: confounded with {what}"))
    base = [one, *cols.values()]
    for a, b in itertools.combinations(names, 2):
        term = f"{a}×{b}"
        xab = _interaction(cols[a], cols[b])
        if not (main_ok[a] and main_ok[b]):
            bad = [k for k in (a, b) if not main_ok[k]]
            out.append(Estimability(term, (a, b), False,
                                    f"{NO_MAIN_EFFECT}{' and '.join(bad)}"))
            continue
        combos = cells[[a, b]].map(_key).drop_duplicates().shape[0]
        needed = len(_levels(cells[a])) * len(_levels(cells[b]))
        if combos < needed:
            out.append(Estimability(term, (a, b), False,
                                    f"not estimable: {combos} of the {needed} {a}×{b} level "
                                    "combinations were run"))
            continue
        gain = _rank(*base, xab) - _rank(*base)
        if gain == xab.shape[1]:
            out.append(Estimability(term, (a, b), True, "estimable"))
            continue
        partners = []
        for c in names:
            if c in (a, b):
                continue
            rest = [one, *(cols[j] for j in names if j != c)]
            if _rank(*rest, xab) - _rank(*rest) > gain:
                partners.append(c)
        what = ", ".join(partners) if partners else "other knobs"
        out.append(Estimability(term, (a, b), False, f"not estimable: confounded with {what}"))
    return out


def main_effects(
    runs: pd.DataFrame, knobs: Sequence[str], value: str = "notpm", *, level: float = LEVEL
) -> pd.DataFrame:
    """Main effect of each varying knob as a ratio to its first level, where estimable.

    Parameters
    ----------
    runs:
        One row per done run: knob columns and ``value`` (positive; others dropped).
    knobs:
        Knob columns.
    value:
        The response column.
    level:
        Coverage of the effect intervals (t with the residual df of the main-effects model).

    Returns
    -------
    DataFrame
        ``knob, level, reference, estimable, reason, ratio, ci_low, ci_high, p_value, df``;
        one row per non-reference level. Non-estimable rows have NaN figures and the reason;
        without residual df (no repetitions) ratios are given without interval.
    """
    df = runs[np.isfinite(runs[value].astype(float)) & (runs[value].astype(float) > 0)]
    df = df.reset_index(drop=True)
    names = varying(df, knobs)
    cells = df[names].map(_key).drop_duplicates() if names else df.iloc[:0]
    est = {e.term: e for e in estimability(df.loc[cells.index], names)} if names else {}
    y = np.log(df[value].to_numpy(dtype=float))
    cols = _main_columns(df, names)
    x = np.column_stack([np.ones(len(df)), *cols.values()]) if names else np.ones((len(df), 1))
    xtx_pinv = np.linalg.pinv(x.T @ x)
    beta = xtx_pinv @ x.T @ y
    rank = int(np.linalg.matrix_rank(x))
    resid_df = len(df) - rank
    s2 = float(((y - x @ beta) ** 2).sum() / resid_df) if resid_df > 0 else math.nan
    rows = []
    offset = 1
    for k in names:
        levels = _levels(df[k])
        e = est[k]
        for i, lv in enumerate(levels[1:]):
            c = np.zeros(x.shape[1])
            c[offset + i] = 1.0
            ratio = lo = hi = p = math.nan
            if e.estimable:
                d = float(c @ beta)
                ratio = math.exp(d)
                if resid_df > 0:
                    se = math.sqrt(s2 * float(c @ xtx_pinv @ c))
                    t = t_ppf(0.5 + level / 2, resid_df)
                    lo, hi = math.exp(d - t * se), math.exp(d + t * se)
                    p = 2 * t_sf(abs(d) / se, resid_df) if se > 0 else math.nan
            rows.append(dict(knob=k, level=json.loads(lv), reference=json.loads(levels[0]),
                             estimable=e.estimable, reason=e.reason, ratio=ratio, ci_low=lo,
                             ci_high=hi, p_value=p, df=resid_df))
        offset += len(levels) - 1
    return pd.DataFrame(rows, columns=["knob", "level", "reference", "estimable", "reason",
                                       "ratio", "ci_low", "ci_high", "p_value", "df"])


def interactions(runs: pd.DataFrame, knobs: Sequence[str], value: str = "notpm") -> pd.DataFrame:
    """F test of each estimable two-way interaction against the main-effects model (log scale).

    Returns
    -------
    DataFrame
        ``knob_a, knob_b, estimable, reason, f_stat, p_value, df_num, df_den, rms_pct`` —
        ``rms_pct`` is the RMS change of the fitted cell values the interaction adds, in % (how
        far the cells are from "effect of A times effect of B").
    """
    df = runs[np.isfinite(runs[value].astype(float)) & (runs[value].astype(float) > 0)]
    df = df.reset_index(drop=True)
    names = varying(df, knobs)
    y = np.log(df[value].to_numpy(dtype=float))
    cols = _main_columns(df, names)
    base = np.column_stack([np.ones(len(df)), *cols.values()])
    cells = df[names].map(_key).drop_duplicates() if names else df.iloc[:0]
    est = {e.term: e for e in estimability(df.loc[cells.index], names)} if names else {}

    def fit(x: np.ndarray) -> tuple[np.ndarray, int]:
        beta, *_ = np.linalg.lstsq(x, y, rcond=None)
        return x @ beta, int(np.linalg.matrix_rank(x))

    fitted0, r0 = fit(base)
    rss0 = float(((y - fitted0) ** 2).sum())
    rows = []
    for a, b in itertools.combinations(names, 2):
        e = est[f"{a}×{b}"]
        f = p = rms = math.nan
        q = dden = 0
        if e.estimable:
            fitted1, r1 = fit(np.column_stack([base, _interaction(cols[a], cols[b])]))
            rss1 = float(((y - fitted1) ** 2).sum())
            q, dden = r1 - r0, len(df) - r1
            rms = 100.0 * math.expm1(float(np.sqrt(np.mean((fitted1 - fitted0) ** 2))))
            if dden > 0 and q > 0 and rss1 > 0:
                f = ((rss0 - rss1) / q) / (rss1 / dden)
                p = f_sf(f, q, dden)
        rows.append(dict(knob_a=a, knob_b=b, estimable=e.estimable, reason=e.reason, f_stat=f,
                         p_value=p, df_num=q, df_den=dden, rms_pct=rms))
    return pd.DataFrame(rows, columns=["knob_a", "knob_b", "estimable", "reason", "f_stat",
                                       "p_value", "df_num", "df_den", "rms_pct"])
