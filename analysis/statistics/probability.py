"""The few distribution functions the verdicts use, straight from ``scipy.special``.

``scipy.stats`` builds its 100-odd distribution classes (and their docstrings) at import:
about half a second of every ``flushbench report``, for the seven functions below. These are
the very ``scipy.special`` functions ``scipy.stats`` calls for them (``t._ppf`` is
``stdtrit``, ``norm._sf`` is ``ndtr(-x)``, ``chi2._ppf`` is ``2·gammaincinv(df/2, p)``…), so
the values are the same; ``tests/analysis/statistics/test_probability.py`` checks them against
``scipy.stats`` on a grid. Rarely taken paths (the asymptotic Mann-Whitney test of large
samples, Spearman's rho) still import ``scipy.stats`` where they run.
"""

from __future__ import annotations

import numpy as np
from scipy import special


def t_ppf(q: float, df: float) -> float:
    """Student's t quantile: ``scipy.stats.t.ppf(q, df)``."""
    return float(special.stdtrit(df, q))


def t_sf(x: float, df: float) -> float:
    """Student's t upper tail ``P(T > x)``: ``scipy.stats.t.sf(x, df)``."""
    return float(special.stdtr(df, -x))


def norm_ppf(q: float) -> float:
    """Standard normal quantile: ``scipy.stats.norm.ppf(q)``."""
    return float(special.ndtri(q))


def norm_sf(x: float) -> float:
    """Standard normal upper tail ``P(Z > x)``: ``scipy.stats.norm.sf(x)``."""
    return float(special.ndtr(-x))


def chi2_sf(x: float, df: float) -> float:
    """Chi-squared upper tail: ``scipy.stats.chi2.sf(x, df)``."""
    return float(special.chdtrc(df, x))


def chi2_median(df: float) -> float:
    """Median of the chi-squared distribution: ``scipy.stats.chi2.median(df)``."""
    return float(2 * special.gammaincinv(df / 2, 0.5))


def f_sf(x: float, dfn: float, dfd: float) -> float:
    """F distribution upper tail: ``scipy.stats.f.sf(x, dfn, dfd)``."""
    return float(special.fdtrc(dfn, dfd, x))


def t_ppf_array(q: float, df: np.ndarray) -> np.ndarray:
    """Student's t quantile for an array of degrees of freedom (``scipy.stats.t.ppf``)."""
    return special.stdtrit(df, q)


def f_sf_array(x: np.ndarray, dfn: float, dfd: float) -> np.ndarray:
    """F distribution upper tail for an array of values (``scipy.stats.f.sf``)."""
    return special.fdtrc(dfn, dfd, x)
