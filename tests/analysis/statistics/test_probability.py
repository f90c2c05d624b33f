"""The distribution functions taken from scipy.special equal scipy.stats' own, and the report
path does not import scipy.stats (its half-second import is what they replace)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from scipy import stats

from analysis.statistics import probability as pr

DFS = [1, 1.5, 2, 3, 4.7, 6, 10, 33, 120, 1e6]
QS = [0.001, 0.025, 0.5, 0.8, 0.975, 0.999]
XS = [-4.0, -1.96, -0.3, 0.0, 0.7, 2.0, 3.5, 12.0]


@pytest.mark.parametrize("df", DFS)
def test_t_and_chi2_equal_scipy_stats(df: float) -> None:
    for q in QS:
        assert pr.t_ppf(q, df) == pytest.approx(stats.t.ppf(q, df), rel=1e-12, abs=1e-12)
    for x in XS:
        assert pr.t_sf(x, df) == pytest.approx(stats.t.sf(x, df), rel=1e-12, abs=1e-300)
        if x >= 0:
            assert pr.chi2_sf(x, df) == pytest.approx(stats.chi2.sf(x, df), rel=1e-12)
    assert pr.chi2_median(df) == pytest.approx(stats.chi2.median(df), rel=1e-12)
    arr = np.array(DFS)
    np.testing.assert_allclose(pr.t_ppf_array(0.975, arr), stats.t.ppf(0.975, arr), rtol=1e-12)


def test_normal_and_f_equal_scipy_stats() -> None:
    for q in QS:
        assert pr.norm_ppf(q) == pytest.approx(stats.norm.ppf(q), rel=1e-12)
    for x in XS:
        assert pr.norm_sf(x) == pytest.approx(stats.norm.sf(x), rel=1e-12, abs=1e-300)
        if x >= 0:
            for dfn, dfd in ((1, 5), (3, 33), (7.5, 200)):
                assert pr.f_sf(x, dfn, dfd) == pytest.approx(stats.f.sf(x, dfn, dfd), rel=1e-12)


def test_the_report_path_does_not_import_scipy_stats() -> None:
    code = ("import sys, flushbench.cli, analysis.report.writer, analysis.comparisons.compare,"
            " analysis.comparisons.scorecard;"
            "print(sorted(m for m in sys.modules if m.startswith('scipy.stats')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]", f"imported on the report path: {out}"
