"""The shipped equal-load study (issue 55, item 4), as designed (no server needed): the 2011
post's rows at one fixed rate below every row's flat-out NOTPM in the flash study, and the
same rows' highest rate under a p99 target — both under the windows rules (15-minute runs,
10-minute whole-cycle windows, start offsets)."""

from __future__ import annotations

from core import paths
from core.experiment.cells import expand
from core.experiment.loading import load_experiment

FIXED = paths.EXPERIMENTS_DIR / "rate-2011.yaml"
SEARCH = paths.EXPERIMENTS_DIR / "rate-2011-search.yaml"
ROWS = ["base", "dw-off-50", "fast", "ps-bigredo-75", "ps-keep-average"]
#: The slowest row's flat-out NOTPM in the flash study (docs/study-2011/README.md: XtraDB's
#: big-redo row at max_dirty 75).
SLOWEST_FLAT_OUT = 3214


def test_both_files_run_the_same_rows_under_the_windows_rules() -> None:
    cells = {}
    for path in (FIXED, SEARCH):
        exp = load_experiment(path)
        assert [inc.name for inc in exp.include] == ROWS
        cells[path] = {c.label: c.knobs for c in expand(exp, str(path))}
        window = exp.resolved_window()
        assert window["duration"] >= 15 * 60 and window["end"] - window["start"] >= 10 * 60
        assert window["cycles"] == "whole" and exp.pre_run.start_jitter == 120
        assert exp.fixed.values()["storage"] == "flash-2011"
    assert list(cells[FIXED].values()) == list(cells[SEARCH].values())


def test_the_fixed_rate_is_one_every_row_carried_flat_out_with_room() -> None:
    exp = load_experiment(FIXED)
    assert exp.workload.rate == 2400 and exp.repetitions == 3
    assert exp.workload.rate <= 0.8 * SLOWEST_FLAT_OUT


def test_the_search_starts_at_the_fixed_rate_and_steps_by_400() -> None:
    exp = load_experiment(SEARCH)
    target = exp.workload.rate_search.max_under  # type: ignore[union-attr]
    assert (target.p99, target.stall_s, target.start, target.step) == (1000.0, 0.0, 2400, 400)
    assert target.start == load_experiment(FIXED).workload.rate


def test_percona_s_method_acts_in_its_row() -> None:
    """keep_average runs only while adaptive flushing is on (Percona Server 5.5's master
    thread): the row that asks about it leaves adaptive flushing on (the experiment's
    `fixed`), where the post's optimized mode turned it off and measured no method at all."""
    for path in (FIXED, SEARCH):
        exp = load_experiment(path)
        (cell,) = [c for c in expand(exp, str(path))
                   if c.knobs.get("adaptive_checkpoint") == "keep_average"]
        assert cell.knobs["adaptive_flushing"] is True and cell.knobs["server"] == "percona-5.5"
