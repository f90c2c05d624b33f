"""Experiments compared across databases, on the recorded 2011 study (issue 26).

Source A is a copy of the committed study database; source B is a second copy standing in
for "last month's host": every interval's count halved (so each run's NOTPM is exactly half
of A's, and each cell's ratio to its baseline is unchanged) and one cell deleted (so one cell
of A matches nothing). The expectations follow from that by hand: B/A = 0.5 for every cell;
5 vs 5 baseline runs all lower give the smallest exact Mann-Whitney p (2/252), 3 vs 3 cannot
reach 0.05; pooled over the two sources, each ratio is A's own with a standard error 1/√2 of
A's and Cochran's Q = 0 (p = 1). The same through the CLI with B as a study bundle and as a
PostgreSQL database.
"""

from __future__ import annotations

import math
import re
import sqlite3
from pathlib import Path

import numpy as np
import pytest
import sqlalchemy as sa
from scipy import stats

from analysis.comparisons import crossdb
from analysis.comparisons.compare import Comparison
from analysis.comparisons.crossdb import cross_compare, parse_sources
from analysis.tables.frames import load
from core.errors import AnalysisError
from store.db import ResultsDB
from tests.support.cli_runner import CliRun
from tests.support.pg_rows import copy_rows
from tests.support.recorded import copy_recorded, recorded_pair

DROPPED = "doublewrite=on max_dirty_pages_pct=15 io_capacity=20000"
ROWS_ON50 = "doublewrite=on max_dirty_pages_pct=50 io_capacity=20000"
ROWS_OFF50 = "doublewrite=off max_dirty_pages_pct=50 io_capacity=20000"


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(A, B): the recorded study, and its half-speed copy without the max_dirty 15 cell."""
    a, b = recorded_pair("stability-2011", tmp_path_factory)
    conn = sqlite3.connect(b)
    try:
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("UPDATE intervals SET primary_count = primary_count * 0.5")
        conn.execute("DELETE FROM cells WHERE label = ?", (DROPPED,))
        # Last month's disk: a bandwidth limit instead of the IOPS limit (context, not matched).
        conn.execute("""UPDATE cells SET knobs = json_set(knobs, '$.storage',
                        json('{"write_bandwidth": 104857600}'))""")
        conn.commit()
    finally:
        conn.close()
    return a, b


@pytest.fixture(scope="module")
def _per_source_comparisons() -> dict[tuple, Comparison]:
    """The comparisons :func:`each_source_compared_once` has computed, by ``compare``'s
    arguments (the sources' files are never written after :func:`sources`)."""
    return {}


@pytest.fixture
def each_source_compared_once(monkeypatch: pytest.MonkeyPatch,
                              _per_source_comparisons: dict[tuple, Comparison]) -> None:
    """``cross_compare`` computes each source's own ``compare`` (≈ 1 CPU-s) once per module.

    Every call of ``cross_compare`` below compares each of its sources on its own first, and
    the refusals under test come after that (matching, pairs): ten calls on the same two
    unchanged files would compute the same two comparisons ten times. The first call per
    source computes it with the real :func:`analysis.comparisons.compare.compare`; later ones
    get that very result. The CLI tests keep their own, as a user's command does.
    """
    real = crossdb.compare

    def compare_once(db: object, experiment: object = None, **options: object
                     ) -> Comparison:
        key = (db, experiment, tuple(sorted(options.items())))
        if key not in _per_source_comparisons:
            _per_source_comparisons[key] = real(db, experiment, **options)
        return _per_source_comparisons[key]

    monkeypatch.setattr(crossdb, "compare", compare_once)


def _notpm(path: Path) -> dict[str, np.ndarray]:
    rs = load(path, "stability-2011").run_summary
    done = rs[rs["status"] == "done"]
    return {str(label): g["notpm"].to_numpy(float) for label, g in done.groupby("cell_label")}


@pytest.fixture(scope="module")
def notpm(sources: tuple[Path, Path]) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Each cell's done runs' NOTPM in A and in B, read from the frames (the tests' by-hand
    figures start from these)."""
    a, b = sources
    return _notpm(a), _notpm(b)


@pytest.mark.usefixtures("each_source_compared_once")
def test_matching_and_verdicts(sources: tuple[Path, Path],
                               notpm: tuple[dict[str, np.ndarray], dict[str, np.ndarray]]
                               ) -> None:
    a, b = sources
    cross = cross_compare(parse_sources([f"stability-2011@{a}", f"stability-2011@{b}"], None))
    assert [s.label for s in cross.sources] == ["stability-2011@a.sqlite",
                                                "stability-2011@b.sqlite"]
    assert cross.on == ["doublewrite", "max_dirty_pages_pct", "io_capacity"]
    assert cross.unmatched == [f"{DROPPED}: only in stability-2011@a.sqlite"]
    assert cross.cells["match"].nunique() == 7
    assert cross.context == {"storage": {"stability-2011@a.sqlite": "{write_iops=1000}",
                                         "stability-2011@b.sqlite":
                                         "{write_bandwidth=104857600}"}}
    # The same cell, B over A: exactly one half, slower only where 5 vs 5 runs allow it.
    between = cross.between.set_index("label")
    assert np.allclose(between["ratio"], 0.5, rtol=1e-9)
    base = "doublewrite=on max_dirty_pages_pct=75 io_capacity=200"
    assert between.loc[base, "verdict"] == "slower"
    assert between.loc[base, "p_value"] == pytest.approx(2 / math.comb(10, 5))
    others = between.drop(index=base)
    assert set(others["verdict"]) == {"not enough repetitions"}
    assert np.allclose(others["p_value"], 0.1)
    # Each source against its own baseline: halving every run changes no ratio.
    per = cross.cells.pivot(index="label", columns="source", values="ratio")
    assert np.allclose(per.iloc[:, 0], per.iloc[:, 1])
    # Pooled with the sources as blocks (the one verdict rule: a cell + source model of log
    # NOTPM over every cell). B is A halved, so by hand: the ratio of A's geometric means, the
    # residual SS twice A's within-cell SS of logs, df = runs − cells − (sources − 1); a pair
    # whose own residuals are significantly noisier than the other cells' (F test, 5 %) uses
    # its own σ on its share of the df.
    values = notpm[0]
    logs = {k: np.log(v) for k, v in values.items() if k != DROPPED}  # matched cells only
    ss = {k: 2 * float(((v - v.mean()) ** 2).sum()) for k, v in logs.items()}
    runs = 2 * sum(len(v) for v in logs.values())
    df = runs - len(logs) - 1
    pooled_sigma = math.sqrt(sum(ss.values()) / df)
    pooled = cross.pooled.set_index("label")
    for label, row in pooled.drop(index=base).iterrows():
        cell, ref = logs[label], logs[base]
        share = df * 2 * (len(cell) + len(ref)) / runs
        own_ss = ss[label] + ss[base]
        rest = (sum(ss.values()) - own_ss) / (df - share)
        noisy = stats.f.sf((own_ss / share) / rest, share, df - share) < 0.05
        sigma, dof = (math.sqrt(own_ss / share), share) if noisy else (pooled_sigma, df)
        t_crit = stats.t.ppf(0.975, dof)
        log_ratio = cell.mean() - ref.mean()
        se = sigma * math.sqrt(1 / (2 * len(cell)) + 1 / (2 * len(ref)))
        assert row["ratio"] == pytest.approx(math.exp(log_ratio), rel=1e-9)
        assert row["ratio_ci_low"] == pytest.approx(math.exp(log_ratio - t_crit * se), rel=1e-9)
        assert row["ratio_ci_high"] == pytest.approx(math.exp(log_ratio + t_crit * se), rel=1e-9)
        assert row["p_value"] == pytest.approx(2 * stats.t.sf(abs(log_ratio) / se, dof), rel=1e-6)
        assert row["heterogeneity_p"] == pytest.approx(1.0)
        assert row["n_sources"] == 2
    # van Elteren over two identical strata of 3 vs 5: the doublewrite-off rows rank below
    # the baseline in both, so they are slower; the doublewrite-on rows are not.
    slower = sorted(pooled.index[pooled["verdict"] == "slower"])
    assert slower == sorted(k for k in pooled.index if k.startswith("doublewrite=off"))


@pytest.mark.usefixtures("each_source_compared_once")
def test_matching_refusals(sources: tuple[Path, Path], tmp_path: Path) -> None:
    a, b = sources
    pair = parse_sources([f"stability-2011@{a}", f"stability-2011@{b}"], None)
    with pytest.raises(AnalysisError, match="have the same values of doublewrite"):
        cross_compare(pair, on=["doublewrite"])
    with pytest.raises(AnalysisError, match="no cell of any experiment sets innodb_nothing"):
        cross_compare(pair, on=["innodb_nothing"])
    with pytest.raises(AnalysisError, match="do not pair up"):
        parse_sources(["x", "y"], ["1.sqlite", "2.sqlite", "3.sqlite"])
    alloc = copy_recorded("allocators", tmp_path / "alloc.sqlite")
    name = ResultsDB(alloc, create=False)
    try:
        with name.session() as s:
            exp = s.execute(sa.text("SELECT name FROM experiments")).scalar_one()
    finally:
        name.dispose()
    with pytest.raises(AnalysisError, match="different metrics"):
        cross_compare(parse_sources([f"stability-2011@{a}", f"{exp}@{alloc}"], None))


def test_cli_compares_a_database_with_a_bundle(sources: tuple[Path, Path], tmp_path: Path,
                                               cli: CliRun,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "300")  # each sentence on one line, as the test reads it
    a, b = sources
    bundle = tmp_path / "last-month.tar.gz"
    code, out, err = cli(["bundle", "stability-2011", "-o", str(bundle), "--db", str(b),
                          "--no-png"])
    assert code == 0, out + err
    code, out, err = cli(["compare", "stability-2011", "--db", str(a), "--db", str(bundle)])
    assert code == 0, out + err
    assert "S1  stability-2011@a.sqlite" in out and "S2  stability-2011@last-month.tar.gz" in out
    assert f"unmatched, left out: {DROPPED}: only in stability-2011@a.sqlite" in out
    assert ("differs between the sources (not matched on): storage: {write_iops=1000} in"
            " stability-2011@a.sqlite; {write_bandwidth=104857600} in"
            " stability-2011@last-month.tar.gz") in out
    assert "S1 = stability-2011@a.sqlite; S2 = stability-2011@last-month.tar.gz" in out
    # M1 is the baseline: B over A is 0.50× and slower.
    m1 = next(line for line in out.splitlines() if line.startswith("│ M1") and "S2 / S1" in line)
    assert "0.50×" in m1 and "slower" in m1
    code, out, err = cli(["compare", f"stability-2011@{a}", f"stability-2011@{b}",
                          "--on", "doublewrite"])
    assert code != 0 and "have the same values of doublewrite" in out + err


@pytest.mark.postgres
def test_cli_compares_sqlite_with_postgres(sources: tuple[Path, Path], pg_cluster,  # noqa: ANN001
                                           cli: CliRun) -> None:
    a, _ = sources
    url = pg_cluster.create_database("cross")
    ResultsDB(url).dispose()  # the schema at head, as the copy's
    copy_rows(a, url)
    code, out, err = cli(["compare", f"stability-2011@{a}", f"stability-2011@{url}"])
    assert code == 0, out + err
    assert "S2  stability-2011@local/" in out
    assert "cells matched on doublewrite, max_dirty_pages_pct, io_capacity: 8 matched" in out
    # The same runs in both: every cell's ratio is 1.00 with no difference.
    rows = [line for line in out.splitlines() if "S2 / S1" in line]
    assert len(rows) == 8 and all("1.00×" in line for line in rows)
    assert not any("slower" in line or "faster" in line for line in rows)


def test_cli_report_across_databases(sources: tuple[Path, Path], tmp_path: Path,
                                     cli: CliRun) -> None:
    a, b = sources
    out = tmp_path / "report"
    code, text, err = cli(["report", f"stability-2011@{a}", f"stability-2011@{b}", "-o",
                           str(out), "--no-png"])
    assert code == 0, text + err
    page = (out / "report.html").read_text()
    assert "<h1>stability-2011@a.sqlite · stability-2011@b.sqlite</h1>" in page
    assert f"<li>{DROPPED}: only in stability-2011@a.sqlite</li>" in page
    # Every table row names its source; the B/A rows say 0.50× for every matched cell.
    assert page.count("<td class='l'>stability-2011@b.sqlite / stability-2011@a.sqlite</td>") == 7
    assert page.count("<td class='l'>0.50× (") == 7
    assert "id=\"fig-01-ratio-per-source\"" in page or "id='fig-01-ratio-per-source'" in page


def _log_ratio(cell: np.ndarray, ref: np.ndarray) -> tuple[float, float]:
    """Log ratio of means and its delta-method variance (as docs/statistics.md says)."""
    var = (cell.var(ddof=1) / (len(cell) * cell.mean() ** 2)
           + ref.var(ddof=1) / (len(ref) * ref.mean() ** 2))
    return math.log(cell.mean() / ref.mean()), var


@pytest.mark.usefixtures("each_source_compared_once")
def test_pairs_by_hand(sources: tuple[Path, Path],
                       notpm: tuple[dict[str, np.ndarray], dict[str, np.ndarray]]) -> None:
    """A's doublewrite off/50 paired with B's on/50: the sources now disagree (Cochran's Q)."""
    a, b = sources
    pair = parse_sources([f"stability-2011@{a}", f"stability-2011@{b}"], None)
    cross = cross_compare(pair, pairs=[[1, 1], [3, 2]])
    on50, off50 = ROWS_ON50, ROWS_OFF50
    base = "doublewrite=on max_dirty_pages_pct=75 io_capacity=200"
    assert cross.on == [] and len(cross.unmatched) == 6 + 5
    assert f"{ROWS_ON50}: not paired, in stability-2011@a.sqlite" in cross.unmatched
    va, vb = notpm
    between = cross.between.set_index("label")
    label = f"{off50} ≙ {on50}"
    expected = math.exp(np.log(vb[on50]).mean() - np.log(va[off50]).mean())
    assert between.loc[label, "ratio"] == pytest.approx(expected, rel=1e-9)
    assert expected == pytest.approx(0.5 * math.exp(np.log(va[on50]).mean()
                                                    - np.log(va[off50]).mean()), rel=1e-9)
    (la, wa), (lb, wb) = (_log_ratio(va[off50], va[base]), _log_ratio(vb[on50], vb[base]))
    w = np.array([1 / wa, 1 / wb])
    logs = np.array([la, lb])
    q = float(np.sum(w * (logs - np.sum(w * logs) / w.sum()) ** 2))
    pooled = cross.pooled.set_index("label")
    assert pooled.loc[label, "heterogeneity_p"] == pytest.approx(stats.chi2.sf(q, 1), rel=1e-9)
    assert pooled.loc[label, "heterogeneity_p"] < 0.05  # by hand: 0.013
    for bad, message in (([[1, 1, 1]], "names 3 cells for 2 sources"),
                         ([[9, 1]], "has no cell 9 (cells 1, 2, 3, 4, 5, 6, 7, 8)"),
                         ([[1, 1], [1, 2]], "cell 1 of stability-2011@a.sqlite is in two")):
        with pytest.raises(AnalysisError, match=re.escape(message)):
            cross_compare(pair, pairs=bad)
    with pytest.raises(AnalysisError, match="either by knobs"):
        cross_compare(pair, pairs=[[1, 1]], on=["doublewrite"])
