"""The shipped MySQL 9.7 io_capacity experiment (issues 52 and 53), as designed (no server
needed): io_capacity 10,000 (the server's own) and 200 crossed with doublewrite on and off,
INNODB_METRICS' flush counters on every row, everything else the generations rerun's MySQL
9.7 rows."""

from __future__ import annotations

from core import paths
from core.experiment.cells import expand, run_order
from core.experiment.loading import load_experiment
from core.experiment.references import row_name

EXPERIMENT = paths.EXPERIMENTS_DIR / "mysql-9.7-io-capacity.yaml"
RERUN = paths.EXPERIMENTS_DIR / "generations-today.yaml"


def test_it_crosses_io_capacity_with_doublewrite_on_the_rerun_s_mysql_9_7_rows() -> None:
    exp = load_experiment(EXPERIMENT)
    cells = expand(exp, str(EXPERIMENT))
    names = [row_name(inc) for inc in exp.include]
    assert names == ["io-10000", "io-10000-dw-off", "io-200", "io-200-dw-off"]
    crossed = {(c.knobs.get("io_capacity"), c.knobs["doublewrite"]) for c in cells}
    # io_capacity unset is the server's own 10,000 (docs/domain.md: MySQL 9.7's defaults).
    assert crossed == {(None, True), (None, False), (200, True), (200, False)}
    (base,) = [c for c in cells if c.is_baseline]
    assert (base.knobs.get("io_capacity"), base.knobs["doublewrite"]) == (None, True)
    rerun = load_experiment(RERUN)
    today = next(c for c in expand(rerun, str(RERUN))
                 if c.knobs["server"] == "mysql-9.7" and c.knobs["doublewrite"]).knobs
    assert exp.server == today.pop("server") == "mysql-9.7"
    for cell in cells:
        # Every row counts its flushes by kind (the ledger's split of the flush list) ...
        assert cell.knobs.pop("var.innodb_monitor_enable") == "module_buffer"
        # ... and is otherwise the rerun's MySQL 9.7 row but for the two knobs crossed.
        assert {k: v for k, v in cell.knobs.items() if k not in ("io_capacity", "doublewrite")} \
            == {k: v for k, v in today.items() if k not in ("io_capacity", "doublewrite")}
    assert (exp.base_config, exp.dataset, exp.workload, exp.window, exp.pre_run) == (
        rerun.base_config, rerun.dataset, rerun.workload, rerun.window, rerun.pre_run)
    assert exp.order.mode == "blocks" and len(run_order(exp, cells)) == 12
