"""The typed experiment model: expansion is a pure function with stable cell ids."""

from __future__ import annotations

from pathlib import Path

import pytest

from core import paths
from core.errors import ConfigError
from core.experiment.cells import cell_key, expand, run_order
from core.experiment.hashes import spec_hash
from core.experiment.knobs import Knobs
from core.experiment.loading import load_experiment
from core.experiment.spec import ExperimentSpec


def _exp(**over) -> ExperimentSpec:
    data = {
        "version": 1,
        "name": "t",
        "dataset": {"warehouses": 1},
        "workload": {"duration": "60s"},
        **over,
    }
    return ExperimentSpec.model_validate(data)


def test_product_in_axis_order() -> None:
    exp = _exp(matrix={"doublewrite": [True, False], "max_dirty_pages_pct": [50, 75]})
    cells = expand(exp)
    assert [c.knobs for c in cells] == [
        {"doublewrite": True, "max_dirty_pages_pct": 50},
        {"doublewrite": True, "max_dirty_pages_pct": 75},
        {"doublewrite": False, "max_dirty_pages_pct": 50},
        {"doublewrite": False, "max_dirty_pages_pct": 75},
    ]
    assert [c.position for c in cells] == [0, 1, 2, 3]
    assert cells[0].label == "doublewrite=on max_dirty_pages_pct=50"
    assert [c.is_baseline for c in cells] == [True, False, False, False]


def test_fixed_merged_but_not_in_labels() -> None:
    exp = _exp(fixed={"io_capacity": 1000}, matrix={"doublewrite": [True, False]})
    cells = expand(exp)
    assert cells[1].knobs == {"io_capacity": 1000, "doublewrite": False}
    assert cells[1].label == "doublewrite=off"


def test_scalar_axis_is_one_level() -> None:
    cells = expand(_exp(matrix={"doublewrite": "off", "io_capacity": [200, 400]}))
    assert [c.knobs["doublewrite"] for c in cells] == [False, False]


def test_cell_key_is_stable_and_order_free() -> None:
    a = cell_key({"doublewrite": True, "max_dirty_pages_pct": 60})
    b = cell_key({"max_dirty_pages_pct": 60.0, "doublewrite": True})
    assert a == b
    assert a != cell_key({"doublewrite": True, "max_dirty_pages_pct": 61})
    # The same cell in an edited experiment keeps its id (re-queuing reuses finished cells).
    first = expand(_exp(matrix={"doublewrite": [True, False]}))
    edited = expand(_exp(matrix={"doublewrite": [False, True]}, repetitions=3))
    assert {c.key for c in first} == {c.key for c in edited}


def test_exclude_then_include() -> None:
    exp = _exp(
        matrix={"doublewrite": [True, False], "max_dirty_pages_pct": [50, 75]},
        exclude=[{"doublewrite": False, "max_dirty_pages_pct": 50}],
        include=[{"doublewrite": False, "max_dirty_pages_pct": 60}],
    )
    cells = expand(exp)
    assert [(c.knobs["doublewrite"], c.knobs["max_dirty_pages_pct"]) for c in cells] == [
        (True, 50), (True, 75), (False, 75), (False, 60)]
    assert [c.position for c in cells] == [0, 1, 2, 3]


def test_duplicate_include_names_its_index_after_exclude() -> None:
    exp = _exp(
        matrix={"doublewrite": [True, False]},
        exclude=[{"doublewrite": False}],
        include=[{"doublewrite": True}],
    )
    with pytest.raises(ConfigError) as info:
        expand(exp, "e.yaml")
    assert info.value.where == "e.yaml: include[0]"
    assert "duplicate cell doublewrite=on (also cell #1)" in info.value.what


def test_cross_knob_rule_checked_per_merged_cell() -> None:
    exp = _exp(fixed={"io_capacity_max": 2000}, matrix={"io_capacity": [1000, 4000]})
    with pytest.raises(ConfigError) as info:
        expand(exp, "e.yaml")
    assert "io_capacity 4000 exceeds io_capacity_max 2000" in info.value.render()


def test_include_only_has_no_implicit_empty_cell() -> None:
    cells = expand(_exp(include=[{"doublewrite": True}, {"doublewrite": False}]))
    assert len(cells) == 2


def test_baseline_by_partial_values() -> None:
    exp = _exp(matrix={"doublewrite": [True, False], "max_dirty_pages_pct": [50, 75]},
               baseline={"doublewrite": False, "max_dirty_pages_pct": 75})
    assert [c.is_baseline for c in expand(exp)] == [False, False, False, True]


def test_run_order_modes() -> None:
    exp = _exp(matrix={"doublewrite": [True, False]}, repetitions=2)
    cells = expand(exp)
    a, b = cells
    assert [(c.key, r) for c, r in run_order(exp, cells)] == [
        (a.key, 1), (a.key, 2), (b.key, 1), (b.key, 2)]
    inter = exp.model_copy(update={"order": exp.order.model_copy(update={"mode": "interleaved"})})
    assert [(c.key, r) for c, r in run_order(inter, cells)] == [
        (a.key, 1), (b.key, 1), (a.key, 2), (b.key, 2)]
    rnd = exp.model_copy(update={"order": exp.order.model_copy(
        update={"mode": "randomized", "seed": 7})})
    first = [(c.key, r) for c, r in run_order(rnd, cells)]
    assert first == [(c.key, r) for c, r in run_order(rnd, cells)]  # seeded: reproducible
    assert sorted(first) == sorted((c.key, r) for c, r in run_order(exp, cells))


def test_baseline_repetitions_add_rounds_for_the_baseline_only() -> None:
    exp = _exp(matrix={"doublewrite": [True, False]}, repetitions=2, baseline_repetitions=4,
               baseline={"doublewrite": False}, order={"mode": "interleaved"})
    cells = expand(exp)
    on, off = cells
    assert [(c.key, r) for c, r in run_order(exp, cells)] == [
        (on.key, 1), (off.key, 1), (on.key, 2), (off.key, 2), (off.key, 3), (off.key, 4)]
    grouped = exp.model_copy(update={"order": exp.order.model_copy(update={"mode": "as-written"})})
    assert [(c.key, r) for c, r in run_order(grouped, cells)] == [
        (on.key, 1), (on.key, 2), (off.key, 1), (off.key, 2), (off.key, 3), (off.key, 4)]
    assert exp.repetitions_label() == "2 repetitions (baseline 4)"
    assert _exp(repetitions=3).repetitions_label() == "3 repetitions"


def test_an_include_row_can_run_its_own_number_of_times() -> None:
    # Two servers, each with its own A/A baseline: the baseline runs 6 times
    # (baseline_repetitions) and the second server's reference row too (its own repetitions).
    exp = _exp(include=[{"doublewrite": True, "max_dirty_pages_pct": 75},
                        {"doublewrite": False, "max_dirty_pages_pct": 75},
                        {"doublewrite": True, "max_dirty_pages_pct": 60, "repetitions": 6},
                        {"doublewrite": False, "max_dirty_pages_pct": 60}],
               repetitions=4, baseline_repetitions=6, order={"mode": "blocks", "seed": 7})
    cells = expand(exp)
    assert [exp.repetitions_of(c) for c in cells] == [6, 4, 6, 4]
    order = run_order(exp, cells)
    assert len(order) == 20
    runs = {c.key: sorted(r for cell, r in order if cell.key == c.key) for c in cells}
    assert runs[cells[2].key] == [1, 2, 3, 4, 5, 6] and runs[cells[3].key] == [1, 2, 3, 4]
    # Blocks 5 and 6 hold the two six-times rows only (each block every cell at most once).
    assert {cell.key for cell, r in order if r > 4} == {cells[0].key, cells[2].key}
    assert exp.repetitions_label() == "4 repetitions (baseline 6) (1 include row: 6)"
    # The count is not part of the cell: the row's key (and its finished runs) stay.
    plain = _exp(include=[{"doublewrite": True, "max_dirty_pages_pct": 60}])
    assert expand(plain)[0].key == cells[2].key
    with pytest.raises(ValueError, match="include.0.repetitions"):
        _exp(include=[{"doublewrite": True, "repetitions": 0}])


def test_baseline_repetitions_below_repetitions_is_refused() -> None:
    with pytest.raises(ValueError,
                       match=r"baseline_repetitions \(2\) is below repetitions \(3\)"):
        _exp(repetitions=3, baseline_repetitions=2)


def test_knob_model_round_trip() -> None:
    cell = expand(_exp(fixed={"variables": {"innodb-lru-scan-depth": 256}},
                       matrix={"doublewrite": [True, False]}))[0]
    assert cell.knobs["var.innodb_lru_scan_depth"] == 256  # dashes normalized
    model = cell.knob_model()
    assert isinstance(model, Knobs)
    assert model.variables == {"innodb_lru_scan_depth": 256}
    assert model.values() == cell.knobs


def test_switch_accepts_server_spellings() -> None:
    assert Knobs(doublewrite="OFF").doublewrite is False
    assert Knobs(doublewrite=1).doublewrite is True


def test_spec_hash_ignores_formatting(tmp_path: Path) -> None:
    a = tmp_path / "a.yaml"
    b = tmp_path / "b.yaml"
    a.write_text("version: 1\nname: t\ndataset: {warehouses: 1}\nworkload: {duration: 60s}\n")
    b.write_text("# comment\nversion: 1\nname: t\ndataset:\n  warehouses: 1\n"
                 "workload:\n  duration: 1m\n")
    assert spec_hash(load_experiment(a)) == spec_hash(load_experiment(b))


def test_window_defaults_to_second_half() -> None:
    assert _exp().window.resolve(60.0) == (30.0, 60.0)


@pytest.mark.parametrize("name", ["quickstart", "stability-2011", "allocators-oltp"])
def test_shipped_experiments_load_and_expand(name: str) -> None:
    path = paths.EXPERIMENTS_DIR / f"{name}.yaml"
    exp = load_experiment(path)
    cells = expand(exp, str(path))
    assert sum(c.is_baseline for c in cells) == 1
    expected = {"quickstart": 4, "stability-2011": 8, "allocators-oltp": 18}[name]
    assert len(cells) == expected


def test_stability_2011_walk_matches_the_post() -> None:
    exp = load_experiment(paths.EXPERIMENTS_DIR / "stability-2011.yaml")
    cells = expand(exp)
    rows = [(c.knobs["doublewrite"], c.knobs["max_dirty_pages_pct"], c.knobs["io_capacity"])
            for c in cells]
    assert rows == [(True, 75, 200), (True, 50, 20000), (False, 50, 20000), (False, 60, 20000),
                    (False, 70, 20000), (True, 60, 20000), (True, 30, 20000), (True, 15, 20000)]
    assert cells[0].is_baseline
    # Scaled to a 2-core machine (the file's header): 3 repetitions, the baseline 5 times (A/A),
    # 5-minute runs measured over their second half, under a flushing-bound storage profile.
    assert exp.repetitions == 3 and exp.baseline_repetitions == 5
    assert exp.order.mode == "interleaved"
    assert exp.workload.connections == 32 and exp.workload.duration == 300
    assert exp.window.resolve(exp.workload.duration) == (150.0, 300.0)
    assert all(c.knobs["storage"] for c in cells)
