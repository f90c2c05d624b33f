"""Disturbed-run detection, steady-state start, blocked order and their experiment keys — the
pure parts, on constructed samples and files (the real runs: test_disturbed_runs.py)."""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path
from typing import Any

import pytest
import yaml

from core.errors import FlushbenchError
from core.experiment.cells import expand, run_order
from core.experiment.hashes import measurement_hash
from core.experiment.loading import load_experiment
from runner.run import disturbance
from runner.run.sampler import SampleRecord, parse_proc_stat_cpu
from runner.run.steady import choose_start

T0 = dt.datetime(2026, 11, 24, 0, 0, tzinfo=dt.UTC)


def sample(i: int, **fields: Any) -> SampleRecord:
    """Tick i of a 10 s sampler."""
    ts = T0 + dt.timedelta(seconds=10 * i)
    return SampleRecord(seq=i, scheduled_ts=ts, ts=ts, **fields)


def cpu_run(n: int, *, others_per_tick: float, steal_per_tick: float = 0.0) -> list[SampleRecord]:
    """A 2-CPU host (20 CPU-s per 10 s tick): mysqld 9, driver 3, flushbench 0.5 per tick."""
    out = []
    for i in range(n):
        busy = i * (12.5 + others_per_tick)
        steal = i * steal_per_tick
        out.append(sample(i, host_cpu_busy_s=busy, host_cpu_steal_s=steal,
                          host_cpu_idle_s=i * 20.0 - busy - steal,
                          mysqld_cpu_user_s=7.0 * i, mysqld_cpu_sys_s=2.0 * i,
                          driver_cpu_user_s=2.5 * i, driver_cpu_sys_s=0.5 * i,
                          tool_cpu_s=0.5 * i))
    return out


def test_proc_stat_line_is_read_in_seconds() -> None:
    hz = __import__("os").sysconf("SC_CLK_TCK")
    text = f"cpu  {1 * hz} {2 * hz} {3 * hz} {4 * hz} {5 * hz} {6 * hz} {7 * hz} {8 * hz} 9 10\n"
    busy, idle, steal = parse_proc_stat_cpu(text + "cpu0 1 2 3 4 5 6 7 8 9 10\n")
    assert (busy, idle, steal) == (1 + 2 + 3 + 6 + 7, 4 + 5, 8)


def test_others_cpu_is_what_is_left_after_mysqld_the_driver_and_flushbench() -> None:
    quiet = disturbance.cpu_figures(cpu_run(10, others_per_tick=0.2))
    assert quiet is not None
    assert quiet["others_cpu_s"] == pytest.approx(9 * 0.2)
    assert quiet["own_cpu_s"] == pytest.approx(9 * 12.5)
    assert quiet["cpus"] == pytest.approx(2.0)
    assert disturbance.assess(cpu_run(10, others_per_tick=0.2)) == []

    busy = cpu_run(10, others_per_tick=5.0)  # another process takes half a CPU
    found = {f.kind: f for f in disturbance.assess(busy)}
    assert set(found) == {"disturbed-cpu"}
    assert found["disturbed-cpu"].figures["others_share"] == pytest.approx(0.25)
    assert "25.0 %" in found["disturbed-cpu"].message


def test_steal_is_its_own_warning() -> None:
    found = {f.kind for f in disturbance.assess(cpu_run(10, others_per_tick=0.0,
                                                        steal_per_tick=2.0))}
    assert found == {"disturbed-steal"}


def test_only_the_window_is_judged() -> None:
    # Disturbed for the first 5 ticks, quiet afterwards: a window after it sees nothing.
    early = cpu_run(5, others_per_tick=8.0)
    last = early[-1]
    late = [sample(5 + i, host_cpu_busy_s=last.host_cpu_busy_s + i * 12.5,
                   host_cpu_idle_s=last.host_cpu_idle_s + i * 7.5, host_cpu_steal_s=0.0,
                   mysqld_cpu_user_s=last.mysqld_cpu_user_s + 7 * i,
                   mysqld_cpu_sys_s=last.mysqld_cpu_sys_s + 2 * i,
                   driver_cpu_user_s=last.driver_cpu_user_s + 2.5 * i,
                   driver_cpu_sys_s=last.driver_cpu_sys_s + 0.5 * i,
                   tool_cpu_s=last.tool_cpu_s + 0.5 * i) for i in range(1, 8)]
    run = early + late
    assert {f.kind for f in disturbance.assess(run)} == {"disturbed-cpu"}
    assert disturbance.assess(run, start=late[0].ts, end=late[-1].ts) == []


def io_run(n: int, *, own_mib: float, others_mib: float, group_mib: float | None
           ) -> list[SampleRecord]:
    mib = 1 << 20
    return [sample(i, disk_read_sectors=0, disk_write_sectors=int(
                       i * (max(own_mib, group_mib or 0) + others_mib) * mib / 512),
                   own_io_read_bytes=0, own_io_write_bytes=int(i * own_mib * mib),
                   group_read_bytes=None if group_mib is None else 0,
                   group_write_bytes=None if group_mib is None else int(i * group_mib * mib))
            for i in range(n)]


def test_others_io_is_the_device_less_our_own() -> None:
    # mysqld writes 30 MiB per tick; its group is charged 30 % more (fsync metadata).
    quiet = io_run(10, own_mib=30, others_mib=0.5, group_mib=39)
    figures = disturbance.io_figures(quiet)
    assert figures is not None and figures["others_bytes"] == pytest.approx(9 * 0.5 * (1 << 20))
    assert disturbance.assess(quiet) == []
    dd = {f.kind: f for f in disturbance.assess(io_run(10, own_mib=30, others_mib=40,
                                                       group_mib=39))}
    assert set(dd) == {"disturbed-io"}
    assert dd["disturbed-io"].figures["others_bps"] == pytest.approx(4 * (1 << 20))
    # No throttle group: /proc/PID/io alone is our own.
    assert {f.kind for f in disturbance.assess(io_run(10, own_mib=30, others_mib=40,
                                                      group_mib=None))} == {"disturbed-io"}


def limit_run(per_tick_ios: list[float]) -> list[SampleRecord]:
    total, out = 0.0, []
    for i, ios in enumerate([0.0, *per_tick_ios]):
        total += ios
        out.append(sample(i, group_write_ios=int(total), group_read_ios=0))
    return out


def test_a_throttle_held_below_its_limit() -> None:
    limits = {"write_iops": 1000}
    # At the limit (10,000 per 10 s) for 3 intervals, then at 60 %: held back.
    held_back = limit_run([10_000] * 3 + [6_000] * 7)
    found = disturbance.assess(held_back, limits=limits)
    assert [f.kind for f in found] == ["below-limit"]
    assert found[0].figures["intervals_at_limit"] == 3
    assert found[0].figures["share"] == pytest.approx(0.72)
    # Always at it, or never reaching it (a CPU-bound cell): not a disturbance.
    assert disturbance.assess(limit_run([9_900] * 10), limits=limits) == []
    assert disturbance.assess(limit_run([3_000] * 10), limits=limits) == []


def test_a_bandwidth_limit_is_judged_on_the_groups_bytes() -> None:
    # The flash-2011 preset: 10 MiB/s of writes, operations far from binding. At the byte
    # limit throughout: no warning, every interval at it; held to 60 % after 3 intervals:
    # below-limit on write_bandwidth, not on the operations the group never came near.
    mib = 1 << 20
    limits = {"write_bandwidth": 10 * mib, "write_iops": 2000}

    def run(per_tick_mib: list[float]) -> list[SampleRecord]:
        total, out = 0.0, []
        for i, step in enumerate([0.0, *per_tick_mib]):
            total += step * mib
            out.append(sample(i, group_write_bytes=int(total), group_write_ios=i * 4000,
                              group_read_ios=0, group_read_bytes=0))
        return out

    steady = run([100.0] * 10)
    assert disturbance.assess(steady, limits=limits) == []
    figures = disturbance.limit_figures(steady, limits)
    assert figures["write_bandwidth"]["intervals_at_limit"] == 10
    assert figures["write_bandwidth"]["share"] == pytest.approx(1.0)
    assert figures["write_iops"]["intervals_at_limit"] == 0  # 400 of 2,000 IOPS
    found = disturbance.assess(run([100.0] * 3 + [60.0] * 7), limits=limits)
    assert [(f.kind, f.figures["limit_name"]) for f in found] == [("below-limit",
                                                                   "write_bandwidth")]
    assert found[0].figures["share"] == pytest.approx(0.72)
    assert "B/s against its write_bandwidth limit of 10,485,760" in found[0].message


def test_too_few_samples_judge_nothing() -> None:
    assert disturbance.assess(cpu_run(2, others_per_tick=10.0)) == []


# -- steady state --------------------------------------------------------------------------


class Interval:
    def __init__(self, seq: int, value: float) -> None:
        self.phase, self.interval_s = "measure", 10.0
        self.elapsed_s = 10.0 + 10.0 * (seq + 1)  # after a 10 s warmup
        self.primary_count = value * 10.0


def test_steady_start_cuts_a_ramp_and_keeps_the_plateau() -> None:
    rng = random.Random(4)
    values = [100 + 10 * i for i in range(30)] + [400 + rng.gauss(0, 4) for _ in range(60)]
    chosen = choose_start([Interval(i, v) for i, v in enumerate(values)], [],
                          measure_start=T0, warmup=10.0, cap_s=450.0, end_s=900.0)
    assert chosen.reached
    assert 250 <= chosen.start_s <= 450
    assert chosen.series["throughput"]["reached"]


def test_a_drift_never_settles_and_starts_at_the_cap() -> None:
    values = [100 + 3 * i for i in range(90)]
    chosen = choose_start([Interval(i, v) for i, v in enumerate(values)], [],
                          measure_start=T0, warmup=10.0, cap_s=300.0, end_s=900.0)
    assert not chosen.reached and chosen.start_s == 300.0
    assert "no steady state" in chosen.message()


# -- experiment keys ---------------------------------------------------------------------------

BASE: dict[str, Any] = {
    "version": 1, "name": "keys", "server": "mariadb-debian", "base_config": "small",
    "dataset": {"workload": "tpcc", "warehouses": 1},
    "workload": {"driver": "tpcc", "connections": 2, "warmup": "5s", "duration": "60s",
                 "report_interval": "10s"},
    "matrix": {"doublewrite": [True, False], "max_dirty_pages_pct": [50, 75]},
}


def write(tmp_path: Path, **extra: Any) -> Path:
    path = tmp_path / "e.yaml"
    path.write_text(yaml.safe_dump({**BASE, **extra}, sort_keys=False))
    return path


@pytest.mark.parametrize(("extra", "fragments"), [
    ({"window": {"start": "soon"}}, ["window.start", "expected a duration"]),
    ({"window": {"max_start": "20s"}}, ["window.max_start", "write `start: steady`"]),
    ({"window": {"start": "steady", "max_start": "90s"}}, ["window", "does not fit"]),
    ({"disturbed": {"action": "rerun-it"}}, ["disturbed.action", "'keep', 'exclude' or "
                                                                "'rerun'"]),
    ({"disturbed": {"max_reruns": 11}}, ["disturbed.max_reruns", "10"]),
    ({"disturbed": {"rerun": 2}}, ["disturbed.rerun", "unknown key"]),
    ({"order": {"mode": "block"}}, ["order.mode", "'blocks'"]),
])
def test_bad_keys_name_their_path(tmp_path: Path, extra: dict[str, Any],
                                  fragments: list[str]) -> None:
    path = write(tmp_path, **extra)
    with pytest.raises(FlushbenchError) as info:
        load_experiment(path)
    text = info.value.render()
    assert str(path) in text
    for fragment in fragments:
        assert fragment in text, text


def test_new_keys_keep_the_measurement_hash_of_older_files(tmp_path: Path) -> None:
    # Two rounds: blocks of one round are refused as pointless (core.experiment.loading).
    plain = load_experiment(write(tmp_path, repetitions=2))
    policy = load_experiment(write(tmp_path, repetitions=2,
                                   disturbed={"action": "rerun", "max_reruns": 1},
                                   order={"mode": "blocks", "seed": 3}))
    assert measurement_hash(plain) == measurement_hash(policy)
    # Start offsets and the whole-cycle window rule change no run's measurement (issue 51).
    offsets = load_experiment(write(tmp_path, repetitions=2, pre_run={"start_jitter": "90s"},
                                    window={"cycles": "as-set"}))
    assert measurement_hash(offsets) == measurement_hash(plain)
    steady = load_experiment(write(tmp_path, window={"start": "steady", "max_start": "40s"}))
    assert measurement_hash(steady) != measurement_hash(plain)
    assert steady.resolved_window()["start"] == 40.0 and steady.resolved_window()["steady"]


def test_blocks_run_every_cell_once_per_block_in_fresh_orders(tmp_path: Path) -> None:
    exp = load_experiment(write(tmp_path, repetitions=4, order={"mode": "blocks", "seed": 11}))
    cells = expand(exp)
    order = run_order(exp, cells)
    blocks = [order[i:i + len(cells)] for i in range(0, len(order), len(cells))]
    assert len(blocks) == 4
    for r, block in enumerate(blocks, start=1):
        assert sorted(c.key for c, _ in block) == sorted(c.key for c in cells)
        assert {rep for _, rep in block} == {r}
    assert len({tuple(c.key for c, _ in b) for b in blocks}) > 1  # not one order repeated
    assert run_order(exp, cells) == order  # the seed makes it reproducible


# -- the rerun policy on a real results database ---------------------------------------------


def test_rerun_policy_stops_at_max_reruns(tmp_path: Path) -> None:
    from sqlalchemy import select

    from runner.run.run_checks import apply_policy
    from store.db import ResultsDB
    from store.models import Cell, Run, RunEvent
    from tests.support.synthetic_store import SynthCell, build_store

    db = ResultsDB(tmp_path / "r.sqlite")
    build_store(db, [SynthCell(knobs={"doublewrite": True}, notpm=8000)], name="cap",
                repetitions=1, warmup=10, duration=60, n_counters=10)
    exp = load_experiment(write(tmp_path, disturbed={"action": "rerun", "max_reruns": 1}))
    with db.session() as s:
        (first,) = s.scalars(select(Run.id)).all()
    assert apply_policy(db, exp, first) is None  # not disturbed: nothing to do

    def disturb(run_id: int) -> None:
        with db.session() as s, s.begin():
            s.add(RunEvent(run_id=run_id, level="warning", kind="disturbed-io", message="io"))

    disturb(first)
    second = apply_policy(db, exp, first)
    assert second is not None
    with db.session() as s, s.begin():
        new = s.get(Run, second)
        assert (new.status, new.attempt, new.repetition) == ("queued", 2, 1)
        last_index = s.scalar(select(Run.order_index).where(Run.id == first))
        assert new.order_index > last_index  # after every run of the experiment
        new.status = "done"
    disturb(second)
    assert apply_policy(db, exp, second) is None  # the one rerun is used up
    with db.session() as s:
        notes = list(s.scalars(select(RunEvent.message).where(RunEvent.kind == "rerun")
                               .order_by(RunEvent.id)))
        assert len(s.scalars(select(Run.id).join(Cell)).all()) == 2
    assert "queued as attempt 2" in notes[0] and "1 of 1 reruns used" in notes[1]
    keep = exp.model_copy(update={"disturbed": exp.disturbed.model_copy(
        update={"action": "exclude"})})
    assert apply_policy(db, keep, second) is None


def test_a_run_only_below_its_limit_is_not_rerun(tmp_path: Path) -> None:
    """``below-limit`` is a warning, not a disturbance: a bursty flusher is not rerun for it."""
    from sqlalchemy import select

    from runner.run.run_checks import apply_policy, disturbances
    from store.db import ResultsDB
    from store.models import DISTURBANCE_KINDS, Run, RunEvent
    from tests.support.synthetic_store import SynthCell, build_store

    assert "below-limit" not in DISTURBANCE_KINDS
    db = ResultsDB(tmp_path / "r.sqlite")
    build_store(db, [SynthCell(knobs={"doublewrite": True}, notpm=8000)], name="bursty",
                repetitions=1, warmup=10, duration=60, n_counters=10)
    exp = load_experiment(write(tmp_path, disturbed={"action": "rerun", "max_reruns": 2}))
    with db.session() as s, s.begin():
        (run_id,) = s.scalars(select(Run.id)).all()
        s.add(RunEvent(run_id=run_id, level="warning", kind="below-limit",
                       message="below its limit: 78 %"))
    assert disturbances(db, run_id) == []
    assert apply_policy(db, exp, run_id) is None
    with db.session() as s, s.begin():
        s.add(RunEvent(run_id=run_id, level="warning", kind="disturbed-cpu", message="cpu"))
    assert disturbances(db, run_id) == ["disturbed-cpu"]
    assert apply_policy(db, exp, run_id) is not None  # a cause beside it still reruns


@pytest.mark.mysql
def test_plan_says_when_blocks_cannot_reach_a_verdict(tmp_path: Path) -> None:
    from runner.admission.planning import plan

    few = plan(load_experiment(write(tmp_path, repetitions=2, order={"mode": "blocks"})), "e")
    assert any("2 blocks" in n and "needs 3" in n and "left out" in n for n in few.notes)
    enough = plan(load_experiment(write(tmp_path, repetitions=3, order={"mode": "blocks"})),
                  "e")
    assert not any("blocks" in n for n in enough.notes)
