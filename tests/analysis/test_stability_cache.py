"""The stability cache never changes a figure, and never stands in the way of computing one."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.steadiness import stability_cache
from analysis.steadiness.stability import stability
from analysis.steadiness.stability_cache import Series, cache_path, same_figures, stability_many
from analysis.tables.summaries import run_summary
from tests.support.recorded import recorded_copy


def _series() -> list[Series]:
    """Shapes that exercise every branch: flat, oscillating, holes, a step, constant, tiny,
    all-zero, NaN intervals, uneven times."""
    rng = np.random.default_rng(7)
    t = np.arange(90, dtype=float) * 10
    out = [
        Series(1000 + rng.normal(0, 20, 90), 10.0, t),
        Series(1000 + 300 * np.sin(2 * np.pi * t / 120) + rng.normal(0, 20, 90), 10.0, t),
        Series(np.where(np.arange(90) % 15 == 0, 100.0, 1000.0), 10.0, t),
        Series(np.r_[np.full(45, 1000.0), np.full(45, 700.0)], 10.0, t),
        Series(np.full(90, 500.0), 10.0, t),
        Series(np.array([10.0, 12.0]), 10.0, np.array([0.0, 10.0])),
        Series(np.zeros(30), 10.0, t[:30]),
        Series(np.where(np.arange(90) % 9 == 4, np.nan, 800.0 + rng.normal(0, 30, 90)), 10.0, t),
        Series(900 + rng.normal(0, 40, 60), 5.0, np.cumsum(rng.uniform(4, 6, 60))),
    ]
    return out


def _direct(series: list[Series]) -> list:
    return [stability(s.values, interval_s=s.interval_s, times_s=s.times_s) for s in series]


def _refuse_to_compute(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(_s: Series) -> None:
        raise AssertionError("computed although the cache holds the figures")
    monkeypatch.setattr(stability_cache, "_compute", refuse)


def test_cached_figures_equal_computed_ones(monkeypatch: pytest.MonkeyPatch,
                                           tmp_path: Path) -> None:
    monkeypatch.setenv("FLUSHBENCH_CACHE_DIR", str(tmp_path))
    series = _series()
    expected = _direct(series)
    first = stability_many(series)  # computes and stores
    assert cache_path().is_file()
    _refuse_to_compute(monkeypatch)
    second = stability_many(series)  # every figure from the cache
    for want, a, b in zip(expected, first, second, strict=True):
        assert same_figures(want, a)
        assert same_figures(want, b)
        assert b.warnings == want.warnings and isinstance(b.warnings, tuple)


def test_a_changed_series_or_code_is_a_new_key(monkeypatch: pytest.MonkeyPatch,
                                               tmp_path: Path) -> None:
    monkeypatch.setenv("FLUSHBENCH_CACHE_DIR", str(tmp_path))
    s = _series()[1]
    stability_many([s])
    changed = Series(s.values.copy(), s.interval_s, s.times_s)
    changed.values[10] += 1.0
    shifted = Series(s.values, s.interval_s, s.times_s + 10.0)
    keys = {stability_cache.series_key(x) for x in (s, changed, shifted)}
    assert len(keys) == 3
    assert same_figures(stability_many([changed])[0], _direct([changed])[0])
    # Another algorithm (its source changed): the stored figures are not used.
    monkeypatch.setattr(stability_cache, "code_fingerprint", lambda: "another algorithm")
    calls: list[Series] = []
    real = stability_cache._compute
    monkeypatch.setattr(stability_cache, "_compute", lambda x: calls.append(x) or real(x))
    stability_many([s])
    assert calls == [s]


def test_the_fingerprint_covers_every_module_the_figures_import() -> None:
    """The listed sources are closed under their imports from ``analysis``: a module the
    stability figures come to depend on, and that is not listed, fails here."""
    root = Path(stability_cache.__file__).resolve().parents[2]
    listed = set(stability_cache.SOURCES)
    for rel in listed:
        tree = ast.parse((root / rel).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("analysis"):
                target = node.module.replace(".", "/") + ".py"
                assert target in listed, f"{rel} imports {node.module}: add it to SOURCES"


@pytest.mark.parametrize("how", ["folder is a file", "damaged file", "entry of another shape",
                                 "turned off"])
def test_an_unusable_cache_computes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                    how: str) -> None:
    series = _series()[:3]
    if how == "folder is a file":
        (tmp_path / "not-a-folder").write_text("x")
        monkeypatch.setenv("FLUSHBENCH_CACHE_DIR", str(tmp_path / "not-a-folder"))
    else:
        monkeypatch.setenv("FLUSHBENCH_CACHE_DIR", str(tmp_path))
    if how == "damaged file":
        cache_path().write_bytes(b"this is not a database" * 100)
    if how == "entry of another shape":
        stability_many(series)
        import sqlite3
        con = sqlite3.connect(cache_path())
        con.execute("UPDATE stability SET figures = '{\"n\": 3}'")
        con.commit()
        con.close()
    if how == "turned off":
        monkeypatch.setenv("FLUSHBENCH_ANALYSIS_CACHE", "0")
    got = stability_many(series)
    for want, have in zip(_direct(series), got, strict=True):
        assert same_figures(want, have)
    if how == "turned off":
        assert not cache_path().exists()
    if how == "entry of another shape":  # replaced by the right figures
        _refuse_to_compute(monkeypatch)
        assert all(same_figures(a, b) for a, b in zip(_direct(series), stability_many(series),
                                                      strict=True))


def test_run_summary_is_the_same_cold_warm_and_without_cache(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        tmp_path_factory: pytest.TempPathFactory) -> None:
    db = recorded_copy("stability-2011", tmp_path_factory)
    monkeypatch.setenv("FLUSHBENCH_CACHE_DIR", str(tmp_path))
    cold = run_summary(db, "stability-2011")
    warm = run_summary(db, "stability-2011")
    monkeypatch.setenv("FLUSHBENCH_ANALYSIS_CACHE", "0")
    off = run_summary(db, "stability-2011")
    assert cold["score"].notna().sum() >= 20
    pd.testing.assert_frame_equal(cold, warm)
    pd.testing.assert_frame_equal(cold, off)
