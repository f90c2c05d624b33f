"""The shipped write-path factorial (issue 53, item 3), as designed (no server needed): change
buffering × max_dirty_pages_pct × redo on MariaDB 10.11, MariaDB 10.2 at 10.11's defaults of
the three, the generations study's defaults row otherwise, runs long enough for a 10-minute
window, in blocks."""

from __future__ import annotations

from core import paths
from core.experiment.cells import expand, run_order
from core.experiment.loading import load_experiment
from tests.support.built_servers import built_servers_named

FACTORIAL = paths.EXPERIMENTS_DIR / "write-path-factorial.yaml"
STUDY = paths.EXPERIMENTS_DIR / "generations.yaml"
M = 1 << 20


def test_the_factorial_crosses_the_three_defaults_and_runs_10_2_at_10_11_s() -> None:
    exp = load_experiment(FACTORIAL)
    cells = expand(exp, str(FACTORIAL))
    on_1011 = [c.knobs for c in cells if c.knobs["server"] == "mariadb-debian"]
    assert sorted((k["change_buffering"], k["max_dirty_pages_pct"], k["log_file_size"])
                  for k in on_1011) == sorted(
        (cb, pct, size) for cb in ("none", "all") for pct in (75.0, 90.0)
        for size in (80 * M, 160 * M))
    (on_102,) = [c for c in cells if c.knobs["server"] == "mariadb-10.2"]
    (base,) = [c for c in cells if c.is_baseline]
    # 10.11's own defaults of the three (the study's 80M of redo) are the baseline, and the
    # 10.2 row runs exactly them.
    assert {k: base.knobs[k] for k in ("server", "change_buffering", "max_dirty_pages_pct",
                                       "log_file_size")} == {
        "server": "mariadb-debian", "change_buffering": "none", "max_dirty_pages_pct": 90.0,
        "log_file_size": 80 * M}
    assert {k: v for k, v in on_102.knobs.items() if k != "server"} == {
        k: v for k, v in base.knobs.items() if k != "server"}
    # Everything else is the generations study's defaults row, on the same card and load.
    study = load_experiment(STUDY)
    defaults = next(c for c in expand(study, str(STUDY))
                    if c.is_baseline and c.knobs["server"] == "mariadb-debian").knobs
    for cell in cells:
        assert cell.knobs["storage"] == "flash-2011"
        # Every row counts its flushes by kind (the ledger's split of the flush list).
        assert cell.knobs["var.innodb_monitor_enable"] == "module_buffer"
        assert (cell.knobs["doublewrite"], cell.knobs["io_capacity"]) == (
            defaults["doublewrite"], defaults["io_capacity"])
    assert (exp.base_config, exp.dataset, exp.workload.connections) == (
        study.base_config, study.dataset, study.workload.connections)
    # 15-minute runs measured over their last 10 minutes, three blocks.
    window = exp.resolved_window()
    assert window["duration"] == 900 and window["end"] - window["start"] >= 600
    assert exp.order.mode == "blocks" and len(run_order(exp, cells)) == 27
    assert built_servers_named(FACTORIAL) == ["mariadb-10.2"]
