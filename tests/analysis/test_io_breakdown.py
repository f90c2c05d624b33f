"""The I/O breakdown per transaction, from the committed 2011 study, recomputed by hand for
one run through another path (the pt-mext table of its window samples)."""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis.reading.mext import mext
from analysis.tables import frames
from analysis.tables import io_breakdown as io


@pytest.fixture(scope="module")
def study(recorded_study: Path) -> frames.Frames:
    return frames.load(recorded_study, "stability-2011")


def test_one_run_by_hand(study: frames.Frames, recorded_study: Path) -> None:
    runs = io.per_run(recorded_study, study)
    run_id = int(runs.index[0])
    window = mext(recorded_study, run_id, window_only=True, counters=list(io.COUNTERS))
    grown = window.values.iloc[:, 1:].sum(axis=1)  # deltas after the first window sample
    span = window.t_s
    iv = study.intervals[study.intervals["run_id"] == run_id]
    tx = iv[(iv["t"] > span[0]) & (iv["t"] <= span[-1])]["primary_count"].sum()
    row = runs.loc[run_id]
    assert row["transactions"] == tx > 0
    assert row["redo ops"] == pytest.approx(grown["Innodb_log_writes"] / tx)
    assert row["redo KiB"] == pytest.approx(grown["Innodb_os_log_written"] / tx / 1024)
    assert row["doublewrite KiB"] == pytest.approx(
        grown["Innodb_dblwr_pages_written"] * 16384 / tx / 1024)
    assert row["data pages ops"] == pytest.approx(grown["Innodb_pages_written"] / tx)


def test_cells_in_row_order_and_the_doublewrite_copy(study: frames.Frames,
                                                     recorded_study: Path) -> None:
    table = io.per_cell(recorded_study, study)
    assert list(table.index) == list(study.cell_summary.sort_values("position")["cell_label"])
    on = table[[label.startswith("doublewrite=on") for label in table.index]]
    off = table[[label.startswith("doublewrite=off") for label in table.index]]
    # With doublewrite on, every page is written twice: its bytes match the data pages';
    # with it off, there is none. Its operations stay few (128-page batches).
    assert (on["doublewrite KiB"] / on["data pages KiB"]).between(0.8, 1.2).all()
    assert (off["doublewrite KiB"] == 0).all()
    assert (on["doublewrite ops"] < 0.2 * on["data pages ops"]).all()
    assert table["runs"].sum() == 26


def test_figure_has_both_panels_per_part(study: frames.Frames, recorded_study: Path) -> None:
    table = io.per_cell(recorded_study, study)
    fig = io.figure(table)
    assert [t.name for t in fig.data] == ["data pages"] * 2 + ["doublewrite"] * 2 + ["redo"] * 2
    assert {t.xaxis for t in fig.data} == {"x", "x2"}
    assert [y.replace("<br>", " ") for y in fig.data[0].y] == list(table.index)


def test_a_server_without_innodb_page_size_has_16k_pages(recorded_study: Path,
                                                         tmp_path: Path) -> None:
    """MySQL 5.5 has no innodb_page_size: in an experiment of such servers only, no run has
    the variable, and the data pages' bytes are still pages × 16 KiB (not missing)."""
    import shutil
    import sqlite3

    copy = tmp_path / "no-page-size.sqlite"
    shutil.copy(recorded_study, copy)
    con = sqlite3.connect(copy)
    con.execute("DELETE FROM run_variables WHERE name = 'innodb_page_size'")
    con.commit()
    con.close()
    study = frames.load(recorded_study, "stability-2011")
    before = io.per_run(recorded_study, study)
    after = io.per_run(copy, frames.load(copy, "stability-2011"))
    assert after["data pages KiB"].notna().all() and len(after) == len(before)
    assert after["data pages KiB"].to_numpy() == pytest.approx(
        before["data pages KiB"].to_numpy())
