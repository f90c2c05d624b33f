"""Experiment files that say something pointless or contradictory are refused, one error each.

One table: every row patches a valid experiment file (sysbench, two named include rows with
reference results, one matrix axis) and loads it as ``flushbench validate`` does; a refusal is
one :class:`~core.errors.ConfigError` whose ``where`` is ``FILE: key.path`` and whose message
says what to write instead. Rows marked ``None`` are accepted (the closest meaningful setting,
so each rule is seen to refuse only what it should). A stored experiment is not held to these
file rules: the last test reads one back.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from core.errors import ConfigError
from core.experiment.cells import expand
from core.experiment.loading import load_experiment
from core.experiment.spec import ExperimentSpec
from core.paths import SERVER_PROFILES_DIR
from tests.support.patching import merge

ROWS = [{"doublewrite": True, "name": "dw-on", "reference": {"tps": 100.0}},
        {"doublewrite": False, "name": "dw-off", "reference": {"tps": 120.0}},
        {"doublewrite": False, "max_dirty_pages_pct": 50, "name": "dw-off-50",
         "reference": {"tps": 110.0}}]
BASE: dict[str, Any] = {
    "version": 1,
    "name": "pointless",
    "dataset": {"workload": "sysbench", "tables": 1, "table_size": 1000},
    "workload": {"driver": "sysbench", "test": "oltp_read_only", "connections": 4,
                 "warmup": "5s", "duration": "10m", "report_interval": "10s"},
    "include": ROWS,
    "baseline": "dw-on",
    "reference": {"source": "a post"},
}


def rows_with(index: int, **reference: Any) -> list[dict[str, Any]]:
    """The include rows, row ``index``'s reference extended by ``reference``."""
    rows = [dict(r, reference=dict(r["reference"])) for r in ROWS]
    rows[index]["reference"].update(reference)
    return rows


def most_stable(*claims: tuple[Any, list[Any]]) -> dict[str, Any]:
    return {"reference": {"source": "a post", "most_stable": [
        {"name": f"claim {i}", "row": row, "among": among}
        for i, (row, among) in enumerate(claims)]}}


def comparisons(*pairs: tuple[Any, Any]) -> dict[str, Any]:
    return {"reference": {"source": "a post", "comparisons": [
        {"name": f"c{i}", "a": a, "b": b} for i, (a, b) in enumerate(pairs)]}}


@dataclass(frozen=True)
class Case:
    id: str
    patch: dict[str, Any]
    #: The key path the error names, and fragments of its message; None: accepted.
    where: str | None
    expect: tuple[str, ...] = ()


PROFILE = SERVER_PROFILES_DIR / "mariadb-debian.yaml"
CASES = [
    # Stability claims.
    Case("period-on-a-flat-claim",
         {"include": rows_with(0, stability={"shape": "flat", "period": "45s"})},
         "include[0].reference.stability.period", ("belongs to `shape: oscillating`",
                                                   "remove `period`")),
    Case("period-of-days", {"include": rows_with(
        1, stability={"shape": "oscillating", "period": "2d"})},
         "include[1].reference.stability.period", ("not seen twice", "check its unit")),
    Case("period-shorter-than-two-intervals", {"include": rows_with(
        1, stability={"shape": "oscillating", "period": "15s"})},
         "include[1].reference.stability.period", ("cannot be seen", "20s")),
    Case("period-on-an-oscillating-claim", {"include": rows_with(
        1, stability={"shape": "oscillating", "period": "45s"})}, None),
    # most_stable.
    Case("most-stable-among-itself", most_stable(("dw-on", ["dw-on"])),
         "reference.most_stable[0].among", ("among itself alone",)),
    Case("most-stable-naming-a-row-twice", most_stable(("dw-on", ["dw-off", 1])),
         "reference.most_stable[0].among[1]", ("include[1] is named twice",)),
    Case("most-stable-claims-that-contradict",
         most_stable(("dw-on", ["dw-off", "dw-off-50"]), ("dw-off", ["dw-on", "dw-off-50"])),
         "reference.most_stable[1].row", ("contradict", "most_stable[0]")),
    Case("most-stable-claims-over-other-rows",
         most_stable(("dw-on", ["dw-off"]), ("dw-off-50", ["dw-off"])), None),
    Case("most-stable-huge-list", most_stable(("dw-on", ["dw-off"] * 5000)),
         "reference.most_stable[0].among", ("at most 1000",)),
    # comparisons.
    Case("same-pair-compared-twice", comparisons(("dw-off", "dw-on"), ("dw-on", 1)),
         "reference.comparisons[1]", ("comparisons[0] compares the same two rows",)),
    Case("two-pairs-compared", comparisons(("dw-off", "dw-on"), ("dw-off-50", "dw-on")), None),
    # Settings that would do nothing.
    Case("max-reruns-with-keep", {"disturbed": {"action": "keep", "max_reruns": 3}},
         "disturbed.max_reruns", ("action is keep", "`action: rerun`")),
    Case("max-reruns-with-exclude", {"disturbed": {"action": "exclude", "max_reruns": 1}},
         "disturbed.max_reruns", ("action is exclude",)),
    Case("max-reruns-with-rerun", {"disturbed": {"action": "rerun", "max_reruns": 3}}, None),
    Case("blocks-with-one-repetition", {"order": {"mode": "blocks", "seed": 3}},
         "order.mode", ("one round", "`mode: randomized`")),
    Case("interleaved-with-one-repetition", {"order": {"mode": "interleaved"}},
         "order.mode", ("one round", "as written")),
    Case("blocks-with-a-row-repeated", {"order": {"mode": "blocks"}, "include": [
        dict(ROWS[0], repetitions=3), *ROWS[1:]]}, None),
    Case("seed-without-a-random-order", {"order": {"seed": 7}},
         "order.seed", ("mode is as-written", "remove seed")),
    Case("seed-with-interleaved", {"repetitions": 2, "pre_run": {"start_jitter": 0},
                                   "order": {"mode": "interleaved", "seed": 7}},
         "order.seed", ("mode is interleaved", "no run has a start offset")),
    # Repeated cells draw start offsets from the seed (pre_run.start_jitter, on by default).
    Case("seed-with-interleaved-and-start-offsets",
         {"repetitions": 2, "order": {"mode": "interleaved", "seed": 7}}, None),
    Case("seed-with-randomized", {"order": {"mode": "randomized", "seed": 7}}, None),
    Case("one-server-two-spellings-in-the-matrix",
         {"include": [], "baseline": None,
          "matrix": {"server": ["mariadb-debian", str(PROFILE)]}},
         "matrix.server[1]", ("'mariadb-debian'", "spelt two ways")),
    Case("one-server-two-spellings-across-rows",
         {"include": [dict(ROWS[0], server="mariadb-debian"),
                      dict(ROWS[1], server="configs/servers/mariadb-debian.yaml")]},
         "include[1].server", ("spelt two ways",)),
    Case("one-server-one-spelling",
         {"include": [dict(ROWS[0], server="mariadb-debian"),
                      dict(ROWS[1], server="mariadb-debian")]}, None),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_pointless_setting(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(SERVER_PROFILES_DIR.parent.parent)  # relative profile paths: the repo
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(merge(BASE, case.patch), sort_keys=False))
    if case.where is None:
        expand(load_experiment(path), str(path))
        return
    with pytest.raises(ConfigError) as caught:
        load_experiment(path)
    err = caught.value
    text = " ".join(f"{err}".split())
    # A rule of the file names the key in ``where``; a model's rule (a list too long) lists
    # it as the invalid file's one problem.
    assert err.where == f"{path}: {case.where}" or err.where is None and text.startswith(
        f"{path}: {case.where}: "), (err.where, text)
    for fragment in case.expect:
        assert fragment in text, (fragment, text)
    assert len(text) < 600, "one short message"


def test_a_stored_experiment_is_not_held_to_the_file_rules(tmp_path: Path) -> None:
    """A study queued before these rules (its dump, as the worker reads it) stays readable."""
    spec = merge(BASE, {"order": {"mode": "blocks", "seed": 3},
                        "disturbed": {"action": "keep", "max_reruns": 3}})
    stored = ExperimentSpec.model_validate(spec).model_dump(mode="json")
    assert ExperimentSpec.model_validate(stored).order.mode == "blocks"
