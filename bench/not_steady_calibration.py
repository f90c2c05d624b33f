"""The ``not-steady`` rule (``analysis/steadiness/transients.py``) on the recorded studies, row by
row.

Per row of each committed 2011 study: how many runs the rule flags of how many it judged, and
the figures it decides on, as ranges over the row's runs — the checkpoint age's Theil–Sen
slope (MiB/min) and change across the window (% of the maximum), its rank correlation with
time, its last third's level (% of the maximum: a rise that ends at ≥ 87.5 % reached its
limit), and the dirty share's slope (points/min), change (points) and rank correlation.
Each flagged run is listed with its warning. The tables are those of ``docs/statistics.md``
("Not at steady state"); ``tests/analysis/test_transients.py`` checks the rows it names.

Each database is copied first (a committed database is never opened in place); the figures
come from the run digests (:mod:`analysis.writes.run_digest`), as the analysis reads them.

Usage: ``.venv/bin/python bench/not_steady_calibration.py [NAME…]`` (default: both studies).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pandas as pd  # noqa: E402

from analysis.comparisons.scorecard import row_names  # noqa: E402
from analysis.steadiness import transients  # noqa: E402
from analysis.tables import frames
from analysis.writes.run_digest import run_digests  # noqa: E402
from bench.calibration_studies import chosen_studies, markdown, span, study_copies  # noqa: E402
from store.models import RunStatus  # noqa: E402

STUDIES = ("stability-2011-flash", "stability-2011")
MIB = 1024.0 * 1024.0


def run_figures(db: Path, experiment: str) -> pd.DataFrame:
    """One row per done run: its row's name, the rule's inputs and its warning."""
    fr = frames.load(db, experiment)
    rs = fr.run_summary[fr.run_summary["status"] == RunStatus.DONE]
    names = row_names(fr.experiment["stored"].spec, fr.cell_summary)
    digests = run_digests(db, [int(r) for r in rs["run_id"]]).transients
    rows = []
    for r in rs.itertuples():
        figures = digests.get(int(r.run_id)) or {}
        age, limit = figures.get("age") or {}, figures.get("age_limit", float("nan"))
        dirty = figures.get("dirty") or {}
        rows.append({
            "row": names.get(int(r.cell_id)) or r.cell_label,
            "run": int(r.run_id),
            "age_slope": r.checkpoint_age_trend_mib_per_min,
            "age_change": r.checkpoint_age_change_pct,
            "rho": age.get("rho", float("nan")),
            "last_third": 100 * age["last_third"] / limit if age and limit > 0 else float("nan"),
            "dirty_slope": r.dirty_trend_points_per_min,
            "dirty_change": r.dirty_change_points,
            "dirty_rho": dirty.get("rho", float("nan")),
            "warning": r.not_steady if isinstance(r.not_steady, str) else "",
        })
    return pd.DataFrame(rows)


def table(per_run: pd.DataFrame) -> pd.DataFrame:
    """Per row: flagged / runs and the ranges of the rule's figures."""
    out = []
    for row, g in per_run.groupby("row", sort=False):
        out.append({
            "row": row,
            "flagged": f"{int((g['warning'] != '').sum())} / {len(g)}",
            "age MiB/min": span(g["age_slope"], "+.1f"),
            "age change %": span(g["age_change"], "+.0f"),
            "rank corr.": span(g["rho"], "+.2f"),
            "last third %": span(g["last_third"], ".0f"),
            "dirty points/min": span(g["dirty_slope"], "+.2f"),
            "dirty change": span(g["dirty_change"], "+.1f"),
            "dirty rank corr.": span(g["dirty_rho"], "+.2f"),
        })
    return pd.DataFrame(out)


def main() -> None:
    _, names = chosen_studies(__doc__, STUDIES)
    print(f"rule: |change| ≥ {transients.MIN_AGE_CHANGE_PCT:g} % of the maximum checkpoint age"
          f" or ≥ {transients.MIN_DIRTY_CHANGE_POINTS:g} points of dirty pages, |rank corr.| ≥"
          f" {transients.MIN_RANK_CORRELATION:g}; a rise ending at ≥"
          f" {transients.AGE_LIMIT_PCT:g} % of the maximum (≥"
          f" {transients.DIRTY_LIMIT_SHARE:.0%} of max_dirty_pages_pct) reached its limit")
    with tempfile.TemporaryDirectory(prefix="not-steady-") as tmp:
        for name, db in study_copies(names, Path(tmp)):
            per_run = run_figures(db, name)
            print(f"\n{name}: {int((per_run['warning'] != '').sum())} of {len(per_run)} runs"
                  " flagged")
            print(markdown(table(per_run)))
            for r in per_run[per_run["warning"] != ""].itertuples():
                print(f"  run {r.run} ({r.row}): {r.warning}")


if __name__ == "__main__":
    main()
