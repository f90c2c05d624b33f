"""Claims about runs, computed from the committed 2011 study and checked against hand counts:
the three exceptions its README got wrong (noise, the write limit, the redo limit of off/70)."""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis.steadiness import claims
from analysis.tables import frames


@pytest.fixture(scope="module")
def study(recorded_study: Path) -> tuple[frames.Frames, object]:
    """The committed study, read from a private copy (opening it in place would dirty it)."""
    fr = frames.load(recorded_study, "stability-2011")
    return fr, frames.samples(recorded_study, "stability-2011"), recorded_study


def _runs_of(fr: frames.Frames, label: str) -> list[int]:
    rs = fr.run_summary
    return sorted(int(r) for r in rs.loc[rs["cell_label"] == label, "run_id"])


@pytest.mark.parametrize(("claim", "holds", "total", "named"), [
    # "every run of every row is noisy (CV ≥ 10 %)": three are not (hand-counted cv_pct).
    ("noisy", 23, 26, ["run 14 (4.4 %)", "run 18 (6.3 %)", "run 27 (9.5 %)"]),
    # "every run pushed the group's write rate to the limit": five did not (storage events).
    ("limit", 21, 26, ["run 6 (888 of 1,000 IOPS)", "run 9 (726 of 1,000 IOPS)",
                       "run 12 (879 of 1,000 IOPS)", "run 14 (883 of 1,000 IOPS)",
                       "run 25 (889 of 1,000 IOPS)"]),
    # "off/70: no redo limit — not reproduced": one of its three runs reached 100 %.
    ("off70", 1, 3, ["run 24 (peak 100 %)"]),
], ids=["noisy", "write-limit", "off-70-max-age"])
def test_claims_against_hand_counts(study: tuple, claim: str, holds: int, total: int,
                                    named: list[str]) -> None:
    fr, samples, db = study
    if claim == "noisy":
        c = claims.noisy_runs(fr.run_summary)
        listed = c.exceptions
    elif claim == "limit":
        c = claims.reached_write_limit(db, fr.run_summary)
        listed = c.exceptions
    else:
        runs = _runs_of(fr, "doublewrite=off max_dirty_pages_pct=70 io_capacity=20000")
        c = claims.reached_max_checkpoint_age(claims.checkpoint_age_peaks(samples), runs)
        listed = c.holders
    assert (c.holds, c.total) == (holds, total)
    assert listed == named
    assert not c.universal
    sentence = c.sentence()
    assert sentence.startswith(f"{holds} of {total} runs") and all(n in sentence for n in named)


def test_universal_and_empty_claims_read_as_such(study: tuple) -> None:
    fr, samples, _ = study
    baseline = _runs_of(fr, "doublewrite=on max_dirty_pages_pct=75 io_capacity=200")
    c = claims.reached_max_checkpoint_age(claims.checkpoint_age_peaks(samples), baseline)
    assert c.universal and c.sentence().startswith("every run reached") and "(5 of 5)" in \
        c.sentence()
    none = claims.reached_max_checkpoint_age(claims.checkpoint_age_peaks(samples), [])
    assert none.sentence().startswith("no run to")
    assert claims.noisy_runs(fr.run_summary, threshold=100).sentence().startswith("no run is")


def test_the_report_prints_the_claims_with_their_exceptions(recorded_study: Path,
                                                          tmp_path: Path) -> None:
    """The report's "What the runs did" section says exactly what the hand counts say."""
    import html
    import re

    from analysis.report.writer import write_report

    page = write_report(recorded_study, "stability-2011", tmp_path / "r", png=False).read_text()
    # The section itself, not its line in the contents list.
    section = page[page.index(">What the runs did</h2>"):]
    text = html.unescape(re.sub(r"<[^>]+>", "\n", section[:section.index("<h2", 10)]))
    assert "23 of 26 runs are noisy (CV ≥ 10 %); not: run 14 (4.4 %), run 18 (6.3 %)," \
        " run 27 (9.5 %)" in text
    assert "21 of 26 runs pushed their write rate to the limit" in text
    assert "run 9 (726 of 1,000 IOPS)" in text
    assert ("doublewrite=off max_dirty_pages_pct=70 io_capacity=20000: 1 of 3 runs reached the"
            " maximum checkpoint age") in text and "run 24 (peak 100 %)" in text
    # Every row has a run that reached it: one sentence per row, no "other rows" line.
    assert text.count("reached the maximum checkpoint age") == 8 and "in the other" not in text
    # The two sentences the first README got wrong are not made universal.
    assert "every run pushed" not in text and "every run is noisy" not in text


def test_a_bandwidth_limit_counts_as_a_write_limit(study: tuple) -> None:
    """A flash card's limit is bytes: runs judged against write_bandwidth (and, with both
    limits, by the one they came closest to), from the same storage proofs."""
    fr, _, db = study
    done = fr.run_summary[fr.run_summary["status"] == "done"].sort_values("run_id")
    first, second = (int(r) for r in done["run_id"][:2])
    measured = claims._storage_evidence(db, [first, second])
    bps = {r: float(measured[r]["io_write_bps"]) for r in (first, second)}
    summary = done[done["run_id"].isin([first, second])].copy()
    summary["extra"] = [
        {"storage_write_bandwidth": bps[first] / 0.95},  # at 95 % of it: at the limit
        # At half its bandwidth but 99 % of its operations: at a limit (the closest one).
        {"storage_write_bandwidth": bps[second] * 2,
         "storage_write_iops": float(measured[second]["io_write_iops"]) / 0.99},
    ]
    c = claims.reached_write_limit(db, summary)
    assert (c.holds, c.total) == (2, 2)
    assert c.holders[0] == (f"run {first} ({bps[first] / 2**20:,.1f} of "
                            f"{bps[first] / 0.95 / 2**20:,.1f} MiB/s)")
    assert c.holders[1].endswith(" IOPS)")
    summary["extra"] = [{"storage_write_bandwidth": bps[first] * 2},
                        {"storage_write_bandwidth": bps[second] * 2}]
    missed = claims.reached_write_limit(db, summary)
    assert (missed.holds, missed.total) == (0, 2) and missed.exceptions[0].endswith(" MiB/s)")


def test_checkpoint_age_sentences_collapse_when_rows_agree() -> None:
    """No run reached it (the flash study): one sentence, not one per row; some rows did: a
    sentence per such row, and one for the rest."""
    import pandas as pd

    from analysis.report.sentences import checkpoint_age_claims

    rs = pd.DataFrame({"run_id": [1, 2, 3, 4, 5], "cell_id": [1, 1, 2, 2, 3],
                       "status": ["done"] * 4 + ["queued"]})
    cells = pd.DataFrame({"cell_id": [1, 2, 3], "cell_label": ["a=1", "a=2", "a=3"]})
    low = pd.Series({1: 80.0, 2: 85.0, 3: 60.0, 4: 70.0})
    assert checkpoint_age_claims(rs, cells, low) == [
        "no run reached the maximum checkpoint age (≥ 99 % of it in the window) (0 of 4)"]
    mixed = pd.Series({1: 100.0, 2: 85.0, 3: 60.0, 4: 70.0})
    assert checkpoint_age_claims(rs, cells, mixed) == [
        "a=1: 1 of 2 runs reached the maximum checkpoint age (≥ 99 % of it in the window);"
        " not: run 2 (peak 85 %)",
        "in the other row: no run reached the maximum checkpoint age (≥ 99 % of it in the"
        " window) (0 of 2)"]


def test_run_warnings_are_grouped_by_kind() -> None:
    """Fifty "noisy" lines became one with the run ids joined into ranges; a rare kind keeps
    each run's detail; runs without warnings count in the total only."""
    import pandas as pd

    noisy = [f"noisy: CV {10 + i / 10:.1f}% ≥ 10%" for i in range(8)]
    done = pd.DataFrame({
        "run_id": [1, 2, 3, 4, 6, 7, 9, 10, 11],
        "warnings": [noisy[0], noisy[1] + "; step: +12.3% at 200 s (p = 0.001)", noisy[2],
                     "", noisy[3], noisy[4], noisy[5], noisy[6] + "; holes: 1 interval(s)",
                     noisy[7]],
    })
    assert claims.run_warnings_by_kind(done) == [
        "noisy: 8 of 9 runs (runs 1–3, 6–7, 9–11; one run in full: `flushbench show RUN`)",
        "step: 1 of 9 runs: run 2 (+12.3% at 200 s (p = 0.001))",
        "holes: 1 of 9 runs: run 10 (1 interval(s))",
    ]
    assert claims.run_warnings_by_kind(done.assign(warnings="")) == []
