"""The analysis reads a results store the same way on SQLite and on PostgreSQL: frames,
compare, export and the report, on the rows of a real short run (MariaDB + the Go driver)
copied into each backend."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import sqlalchemy as sa

from store.db import ResultsDB
from store.models import Base

pytestmark = [pytest.mark.mysql, pytest.mark.slow]


def copy_store(source_url: str, target_url: str) -> dict[str, int]:
    """Copy every row of every table, in dependency order; return row counts per table."""
    src, dst = sa.create_engine(source_url), sa.create_engine(target_url)
    counts = {}
    try:
        with src.connect() as read, dst.begin() as write:
            for table in Base.metadata.sorted_tables:
                rows = [dict(r._mapping) for r in read.execute(sa.select(table))]
                if rows:
                    write.execute(table.insert(), rows)
                counts[table.name] = len(rows)
    finally:
        src.dispose()
        dst.dispose()
    return counts


def test_frames_compare_export_report_match_across_backends(
    real_results_db: Path, results_url: str, tmp_path: Path
) -> None:
    from analysis.comparisons.compare import compare
    from analysis.report.writer import write_report
    from analysis.tables import frames
    from analysis.tables.export import export

    counts = copy_store(f"sqlite:///{real_results_db}", results_url)
    assert counts["intervals"] > 0 and counts["samples"] > 0
    reference = frames.load(str(real_results_db), "real-quick")
    db = ResultsDB(results_url, create=False)
    try:
        loaded = frames.load(db, "real-quick")
        pd.testing.assert_series_equal(
            loaded.run_summary.sort_values("run_id")["notpm"].reset_index(drop=True),
            reference.run_summary.sort_values("run_id")["notpm"].reset_index(drop=True))
        assert len(loaded.intervals) == len(reference.intervals)
        samples = frames.samples(db, "real-quick")
        assert len(samples) == counts["samples"] and samples["dirty_pct"].notna().any()
        cmp = compare(db, "real-quick")
        ratios = cmp.cells.sort_values("cell_id")["ratio"].to_numpy(dtype=float)
        assert np.isfinite(ratios).all()
        csv = export(db, "real-quick", tmp_path / "intervals.csv")
        assert len(pd.read_csv(csv)) == len(reference.intervals)
        page = write_report(db, "real-quick", tmp_path / "report", png=False)
        assert "doublewrite" in page.read_text()
    finally:
        db.dispose()
