"""The rate search's strategy on synthetic latency curves, and its bad input.

A synthetic cell is a function rate → window p99 (and achieved rate, stalls); the search is
run to its end by feeding :func:`next_rate` each step's figures, as the worker does from the
stored steps.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from core.errors import ConfigError
from core.experiment.loading import load_experiment
from core.experiment.rate_search import (
    MaxUnder,
    StepResult,
    answer,
    answer_text,
    next_rate,
)

Curve = Callable[[float], StepResult]


def knee(limit: float, *, missed_above: float | None = None) -> Curve:
    """p99 50 ms below ``limit`` NOTPM, 50 ms more per 100 NOTPM above it; the achieved rate
    is the target up to ``missed_above``, 80 % of it beyond."""
    def cell(rate: float) -> StepResult:
        p99 = 50.0 if rate <= limit else 50.0 + (rate - limit) / 2
        held_rate = missed_above is None or rate <= missed_above
        return StepResult(rate, p99, rate if held_rate else 0.8 * rate, 0.0)
    return cell


def search(target: MaxUnder, cell: Curve) -> list[StepResult]:
    """Run the search to its end against ``cell``; the steps in the order measured."""
    steps: list[StepResult] = []
    while (rate := next_rate(target, steps)) is not None:
        assert rate not in {s.rate for s in steps}, "a rate is never measured twice"
        steps.append(cell(rate))
    return steps


def target(**kw: Any) -> MaxUnder:
    return MaxUnder.model_validate({"p99": "200ms", "max_steps": 40, **kw})


@pytest.mark.parametrize("limit", [1000.0, 1234.0, 2480.0, 2500.0, 5999.0])
def test_steps_find_the_highest_rate_within_one_step(limit: float) -> None:
    # p99 ≤ 200 ms up to limit + 300 NOTPM on this curve.
    t = target(start=1000, step=500)
    steps = search(t, knee(limit))
    found = answer(t, steps)
    true_limit = limit + 300
    assert found.best is not None and found.finished
    assert true_limit - 500 < found.best.rate <= true_limit
    assert found.lowest_failure is not None and found.lowest_failure.rate == found.best.rate + 500
    assert not found.non_monotone


def test_steps_go_down_when_the_start_fails() -> None:
    t = target(start=3000, step=500)
    steps = search(t, knee(1000))
    assert [s.rate for s in steps] == [3000, 2500, 2000, 1500, 1000]
    assert answer(t, steps).best.rate == 1000  # type: ignore[union-attr]


def test_nothing_held_is_said() -> None:
    t = target(start=1000, step=500)
    steps = search(t, knee(1, missed_above=0))  # no rate is ever achieved
    found = answer(t, steps)
    assert found.best is None and [s.rate for s in steps] == [1000, 500]
    assert "none of the rates tried" in answer_text(t, found)


@pytest.mark.parametrize("limit", [1100.0, 2222.0, 7000.0])
def test_bisection_converges_to_its_resolution(limit: float) -> None:
    t = target(bisect={"low": 500, "high": 10000, "resolution": 100})
    steps = search(t, knee(limit))
    found = answer(t, steps)
    true_limit = limit + 300
    assert found.best is not None and found.lowest_failure is not None
    assert found.best.rate <= true_limit < found.lowest_failure.rate
    assert found.lowest_failure.rate - found.best.rate <= 100
    assert len(steps) <= 2 + 7  # log2(9500 / 100) < 7 midpoints


def test_bisection_whose_top_holds_stops_there_and_says_so() -> None:
    t = target(bisect={"low": 500, "high": 1000, "resolution": 100})
    steps = search(t, knee(5000))
    assert [s.rate for s in steps] == [500, 1000]
    assert "no rate tried failed" in answer_text(t, answer(t, steps))


def test_a_missed_rate_is_not_held_even_with_a_low_p99() -> None:
    t = target(start=1000, step=500)
    steps = search(t, knee(9000, missed_above=2000))  # p99 fine, throughput not
    found = answer(t, steps)
    assert found.best.rate == 2000  # type: ignore[union-attr]
    assert "achieved" in answer_text(t, found)


def test_stalls_fail_a_step() -> None:
    t = target(start=1000, step=500, stall_s="5s")
    def cell(rate: float) -> StepResult:
        return StepResult(rate, 10.0, rate, 0.0 if rate < 2000 else 10.0)
    found = answer(t, search(t, cell))
    assert found.best.rate == 1500 and "stalls 10 s > 5 s" in answer_text(t, found)  # type: ignore[union-attr]


def test_a_non_monotone_curve_keeps_the_answer_below_the_failure_and_says_so() -> None:
    # Bisection measures low, high, then midpoints; this cell fails in a band around 3000
    # and holds again above it: the answer stays below the lowest failure.
    t = target(bisect={"low": 1000, "high": 6000, "resolution": 250})
    def cell(rate: float) -> StepResult:
        bad = 2900 <= rate <= 3600 or rate > 5000
        return StepResult(rate, 500.0 if bad else 80.0, rate, 0.0)
    steps = search(t, cell)
    found = answer(t, steps)
    assert found.best is not None and found.lowest_failure is not None
    assert found.best.rate < 2900 <= found.lowest_failure.rate
    # The midpoint 3500 failed and 4250 … are never tried above it; measured explicitly:
    extra = [*steps, cell(4000)]
    odd = answer(t, extra)
    assert odd.non_monotone == [4000]
    assert odd.best.rate == found.best.rate  # type: ignore[union-attr]
    assert "not monotone: held again at 4,000" in answer_text(t, odd)


def test_the_answer_sentence_names_held_and_failed_steps() -> None:
    t = target(start=2000, step=500)
    steps = [StepResult(2000, 90, 2000, 0), StepResult(2500, 140, 2490, 0),
             StepResult(3000, 410, 2990, 0)]
    text = answer_text(t, answer(t, steps))
    assert text == ("highest rate under p99 200 ms: 2,500 NOTPM (held at 2,500: p99 140 ms;"
                    " failed at 3,000: p99 410 ms > 200 ms)")


def test_max_steps_ends_a_search() -> None:
    t = MaxUnder.model_validate({"p99": 200, "start": 100, "step": 100, "max_steps": 3})
    steps = search(t, knee(100000))
    assert len(steps) == 3 and answer(t, steps).finished


# --- bad input: one error naming the file, the key path and the fix ---------------------

BASE: dict[str, Any] = {
    "version": 1, "name": "search", "dataset": {"warehouses": 1},
    "workload": {"driver": "tpcc", "duration": "20s", "warmup": "2s", "report_interval": "5s",
                 "rate": {"max_under": {"p99": "200ms", "start": 1000, "step": 500}}},
}


def _load(tmp_path: Path, **patch: Any) -> Any:
    data = yaml.safe_load(yaml.safe_dump(BASE))
    for key, value in patch.items():
        section, _, sub = key.partition("__")
        if sub:
            data[section][sub] = value
        else:
            data[section] = value
    path = tmp_path / "search.yaml"
    path.write_text(yaml.safe_dump(data))
    return path, load_experiment(path)


def test_a_valid_search_loads(tmp_path: Path) -> None:
    _path, exp = _load(tmp_path)
    search_ = exp.workload.rate_search
    assert search_ is not None and search_.max_under.p99 == 200.0
    assert search_.max_under.first_rate == 1000


BAD = [
    ("no-step", {"workload__rate": {"max_under": {"p99": "200ms", "start": 1000}}},
     ["workload.rate.max_under.step", "`step` is missing", "bisect: {low, high, resolution}"]),
    ("both-strategies", {"workload__rate": {"max_under": {
        "p99": "200ms", "start": 1000, "step": 500,
        "bisect": {"low": 1, "high": 10, "resolution": 1}}}},
     ["workload.rate.max_under.bisect", "not both"]),
    ("bisect-upside-down", {"workload__rate": {"max_under": {
        "p99": "200ms", "bisect": {"low": 10, "high": 1, "resolution": 1}}}},
     ["workload.rate.max_under.bisect.low", "below `high`"]),
    ("bad-latency", {"workload__rate": {"max_under": {"p99": "fast", "start": 1, "step": 1}}},
     ["workload.rate.max_under.p99", "write e.g. `200ms`"]),
    ("closed-loop-driver", {"workload__driver": "sysbench", "workload__test": "oltp_read_only",
                            "dataset": {"workload": "sysbench", "tables": 1, "table_size": 10}},
     ["workload.rate", "needs the Go tpcc driver", "sysbench runs a closed loop"]),
    ("tpcc-start", {"workload__driver": "tpcc-mysql"},
     ["workload.rate", "needs the Go tpcc driver", "tpcc-mysql runs a closed loop"]),
    ("rate-axis", {"matrix": {"rate": [1000, 2000]}},
     ["matrix.rate", "`matrix` sets `rate` while `workload.rate` searches it",
      "remove the `rate` knob"]),
    ("repetitions", {"repetitions": 3},
     ["repetitions", "measures each cell once", "set `repetitions: 1`"]),
]


@pytest.mark.parametrize(("patch", "fragments"), [(p, f) for _, p, f in BAD],
                         ids=[i for i, _, _ in BAD])
def test_bad_search_input_is_one_clear_error(tmp_path: Path, patch: dict[str, Any],
                                             fragments: list[str]) -> None:
    with pytest.raises(ConfigError) as exc:
        _load(tmp_path, **patch)
    message = exc.value.render()
    assert str(tmp_path / "search.yaml") in message
    for fragment in fragments:
        assert fragment in message, message


def test_an_unfinished_search_counts_its_steps_in_words() -> None:
    t = target(start=2000, step=500)
    assert answer_text(t, answer(t, [])) == \
        "highest rate under p99 200 ms: no step measured yet"
    one = answer_text(t, answer(t, [StepResult(2000, 90, 2000, 0)]))
    assert one.endswith(" — search not finished (1 step so far)"), one
    two = answer_text(t, answer(t, [StepResult(2000, 90, 2000, 0),
                                    StepResult(2500, 140, 2490, 0)]))
    assert two.endswith(" — search not finished (2 steps so far)"), two


def test_a_step_without_figures_says_which_are_missing_not_nan() -> None:
    t = target(start=2000, step=500)
    why = StepResult(2000, math.nan, math.nan, math.nan).failures(t)
    assert why == ["no p99", "no achieved rate recorded", "no stall seconds"]
