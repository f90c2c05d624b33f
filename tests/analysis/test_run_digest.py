"""The run digest (memory row, checkpoint-age peak, window edges per run) is the same from
the cache as from the samples, and a changed sample is a new key."""

from __future__ import annotations

import ast
import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from analysis.reading.memory import run_memory
from analysis.reading.series import samples, window_growth
from analysis.steadiness.claims import checkpoint_age_peaks
from analysis.tables import io_breakdown
from analysis.tables.frames import load
from analysis.writes import ledger, run_digest
from analysis.writes.run_digest import from_samples, run_digests, run_keys
from store.models import RunStatus
from tests.support.recorded import recorded_copy

EXPERIMENT = "stability-2011"


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[int]]:
    db = recorded_copy(EXPERIMENT, tmp_path_factory)
    rs = load(db, EXPERIMENT).run_summary
    return db, [int(r) for r in rs.loc[rs["status"] == RunStatus.DONE, "run_id"]]


def _refuse_samples(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_a: object, **_k: object) -> None:
        raise AssertionError("read the samples although the cache holds every run")
    monkeypatch.setattr(run_digest, "samples", refuse)


def _assert_same(a: run_digest.RunDigests, b: run_digest.RunDigests) -> None:
    pd.testing.assert_frame_equal(a.memory, b.memory)
    pd.testing.assert_series_equal(a.checkpoint_age_peaks, b.checkpoint_age_peaks)
    pd.testing.assert_frame_equal(a.window, b.window)


def test_cached_digests_equal_the_samples_figures(study: tuple[Path, list[int]],
                                                  monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    db, done = study
    monkeypatch.setenv("FLUSHBENCH_CACHE_DIR", str(tmp_path))
    smp = samples(db, run_ids=done, counters=None)
    direct = from_samples(db, smp, done)
    cold = run_digests(db, done)
    _refuse_samples(monkeypatch)
    warm = run_digests(db, done)
    _assert_same(direct, cold)
    _assert_same(direct, warm)
    # ... and the figures are those the samples-based functions give.
    assert len(direct.memory) == len(done) >= 20
    mem = run_memory(smp).set_index("run_id").loc[done].reset_index()
    pd.testing.assert_frame_equal(direct.memory, mem, check_dtype=False)
    peaks = checkpoint_age_peaks(smp)
    assert peaks.notna().sum() >= 20
    pd.testing.assert_series_equal(direct.checkpoint_age_peaks.sort_index(), peaks,
                                   check_names=False)
    growth = window_growth(db, smp, run_digest.WINDOW_COUNTERS).join(
        ledger.window_state(smp))
    assert growth["Innodb_pages_written"].gt(0).sum() >= 20
    assert growth["dirty_pages_mean"].gt(0).sum() >= 20
    pd.testing.assert_frame_equal(direct.window.sort_index(), growth, check_dtype=False)


def test_the_io_breakdown_is_the_same_from_the_digest(study: tuple[Path, list[int]],
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      tmp_path: Path) -> None:
    db, done = study
    monkeypatch.setenv("FLUSHBENCH_CACHE_DIR", str(tmp_path))
    fr = load(db, EXPERIMENT)
    from_all_samples = io_breakdown.per_cell(db, fr)
    from_digest = io_breakdown.per_cell(db, fr, window=run_digests(db, done).window)
    assert len(from_all_samples) == 8
    assert set(io_breakdown.COUNTERS) <= set(run_digest.WINDOW_COUNTERS)
    assert set(ledger.COUNTERS) <= set(run_digest.WINDOW_COUNTERS)
    pd.testing.assert_frame_equal(from_all_samples, from_digest)


def test_a_changed_sample_or_window_is_a_new_key(study: tuple[Path, list[int]],
                                                 tmp_path_factory: pytest.TempPathFactory,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 tmp_path: Path) -> None:
    _, done = study
    monkeypatch.setenv("FLUSHBENCH_CACHE_DIR", str(tmp_path))
    db = recorded_copy(EXPERIMENT, tmp_path_factory)
    before = run_keys(db, done)
    first = run_digests(db, done)
    run, other = done[0], done[1]
    con = sqlite3.connect(db)
    con.execute("UPDATE samples SET mysqld_rss_bytes = mysqld_rss_bytes + 4096 * 1024 * 1024 "
                "WHERE run_id = ? AND seq = (SELECT MAX(seq) FROM samples WHERE run_id = ?)",
                (run, run))
    con.execute("UPDATE runs SET window_start_s = 1.0 WHERE id = ?", (other,))
    con.commit()
    con.close()
    after = run_keys(db, done)
    assert {r for r in done if before[r] != after[r]} == {run, other}
    second = run_digests(db, done)
    peak_before = first.memory.set_index("run_id")["rss_peak_mb"][run]
    assert second.memory.set_index("run_id")["rss_peak_mb"][run] > peak_before + 4000
    assert second.window.loc[other, "t_min"] != first.window.loc[other, "t_min"]
    pd.testing.assert_frame_equal(second.window.drop(index=other),
                                  first.window.drop(index=other))


def test_an_unchanged_file_is_not_aggregated_again(study: tuple[Path, list[int]],
                                                   tmp_path_factory: pytest.TempPathFactory,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path: Path) -> None:
    """The sample aggregate of a SQLite file is read once per state of the file: the keys of
    an unchanged file come without reading the samples, a commit reads them again."""
    _, done = study
    monkeypatch.setenv("FLUSHBENCH_CACHE_DIR", str(tmp_path))
    db = recorded_copy(EXPERIMENT, tmp_path_factory)
    reads: list[list[int]] = []
    real = run_digest.sample_aggregates

    def counted(s, ids, summed):  # noqa: ANN001, ANN202 - the real function's signature
        reads.append(list(ids))
        return real(s, ids, summed)

    monkeypatch.setattr(run_digest, "sample_aggregates", counted)
    first = run_keys(db, done)
    assert len(reads) == 1
    assert run_keys(db, done) == first and len(reads) == 1, "an unchanged file read again"
    con = sqlite3.connect(db)
    con.execute("UPDATE samples SET pages_dirty = pages_dirty + 1 "
                "WHERE run_id = ? AND seq = (SELECT MIN(seq) FROM samples WHERE run_id = ?)",
                (done[0], done[0]))
    con.commit()
    con.close()
    after = run_keys(db, done)
    assert len(reads) == 2
    assert {r for r in done if after[r] != first[r]} == {done[0]}


def test_no_runs_and_the_cache_turned_off(study: tuple[Path, list[int]],
                                          monkeypatch: pytest.MonkeyPatch,
                                          tmp_path: Path) -> None:
    db, done = study
    monkeypatch.setenv("FLUSHBENCH_CACHE_DIR", str(tmp_path))
    empty = run_digests(db, [])
    assert empty.memory.empty and empty.checkpoint_age_peaks.empty and empty.window.empty
    monkeypatch.setenv("FLUSHBENCH_ANALYSIS_CACHE", "0")
    _assert_same(run_digests(db, done[:3]),
                 from_samples(db, samples(db, run_ids=done[:3], counters=None), done[:3]))
    assert not (tmp_path / "analysis-cache.sqlite").exists()


def test_the_fingerprint_covers_every_module_the_figures_import() -> None:
    """The listed sources are closed under their imports from ``analysis`` (the cache's own
    store aside): a module the figures come to depend on, and that is not listed, fails here."""
    root = Path(run_digest.__file__).resolve().parents[2]
    listed = set(run_digest.SOURCES)
    for rel in listed:
        for node in ast.walk(ast.parse((root / rel).read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("analysis"):
                base = node.module.replace(".", "/")
                # ``from analysis.statistics import blocked``: the package's modules named.
                targets = [f"{base}/{alias.name}.py" for alias in node.names] \
                    if (root / base).is_dir() else [base + ".py"]
                for target in targets:
                    if target != "analysis/reading/figure_cache.py":
                        assert target in listed, f"{rel} imports {target}: add it to SOURCES"
