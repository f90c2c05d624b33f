"""pre_run.start_jitter (issue 51): a seeded random extra warm-up per run, so repetitions meet
a flush cycle at different phases; and window.cycles, an analysis-only key."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.errors import ConfigError
from core.experiment.hashes import measurement_hash
from core.experiment.loading import load_experiment
from core.experiment.sections import DEFAULT_START_JITTER_S
from core.experiment.spec import ExperimentSpec, start_jitter, start_offset


def _exp(**over) -> ExperimentSpec:
    data = {"version": 1, "name": "t", "dataset": {"warehouses": 1},
            "workload": {"duration": "60s"}, **over}
    return ExperimentSpec.model_validate(data)


def test_on_by_default_when_a_cell_repeats_and_off_when_asked() -> None:
    assert start_jitter(_exp()) == 0  # one repetition: nothing to de-phase
    assert start_jitter(_exp(repetitions=2)) == DEFAULT_START_JITTER_S
    assert start_jitter(_exp(baseline_repetitions=5)) == DEFAULT_START_JITTER_S
    assert start_jitter(_exp(repetitions=3, pre_run={"start_jitter": 0})) == 0
    assert start_jitter(_exp(pre_run={"start_jitter": "3m"})) == 180
    assert start_offset(_exp(repetitions=3, pre_run={"start_jitter": 0}), 7) == 0


def test_offsets_are_reproducible_per_run_and_differ_between_runs() -> None:
    exp = _exp(repetitions=3, order={"mode": "blocks", "seed": 11})
    offsets = [start_offset(exp, run_id) for run_id in range(1, 201)]
    # The same experiment and run id give the same offset, in any process.
    assert offsets == [start_offset(_exp(repetitions=3, order={"mode": "blocks", "seed": 11}),
                                    run_id) for run_id in range(1, 201)]
    assert all(o == int(o) and 0 <= o <= DEFAULT_START_JITTER_S for o in offsets)
    # They spread over the whole range (a uniform draw, not a constant).
    assert len(set(offsets)) > 60 and min(offsets) < 15 and max(offsets) > 105
    # Another seed draws other offsets.
    other = _exp(repetitions=3, order={"mode": "blocks", "seed": 12})
    assert [start_offset(other, r) for r in range(1, 201)] != offsets


def test_neither_key_changes_the_measurement_hash() -> None:
    """Both are plan-only: re-queueing a study with them keeps its finished runs."""
    plain = _exp(repetitions=3)
    assert measurement_hash(_exp(repetitions=3, pre_run={"start_jitter": "90s"})) \
        == measurement_hash(plain)
    assert measurement_hash(_exp(repetitions=3, window={"cycles": "as-set"})) \
        == measurement_hash(plain)
    assert measurement_hash(_exp(repetitions=3, pre_run={"drain_dirty_pages": False})) \
        != measurement_hash(plain)


def test_the_window_rule_is_stored_for_the_analysis() -> None:
    assert _exp().resolved_window()["cycles"] == "whole"
    assert _exp(window={"cycles": "as-set"}).resolved_window()["cycles"] == "as-set"


@pytest.mark.parametrize(("text", "where"), [
    ("pre_run: {start_jitter: -5s}", "pre_run.start_jitter"),
    ("pre_run: {start_jitter: soon}", "pre_run.start_jitter"),
    ("window: {cycles: half}", "window.cycles"),
])
def test_bad_values_get_one_error_naming_the_key(tmp_path: Path, text: str, where: str) -> None:
    path = tmp_path / "e.yaml"
    path.write_text("version: 1\nname: t\ndataset: {warehouses: 1}\n" + text + "\n")
    with pytest.raises(ConfigError) as err:
        load_experiment(path)
    assert where in err.value.render()
