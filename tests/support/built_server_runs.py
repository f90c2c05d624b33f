"""A tiny experiment on a server ``scripts/build-server.sh`` built (MySQL 5.5, XtraDB 5.5,
Percona 5.5), and what one of its runs recorded, read back.

Shared by the end-to-end tests of the built servers (tests/runner/test_servers_55.py,
tests/runner/test_percona_55.py): the same file, the same read-back, the same redo checks.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import select

from store.db import ResultsDB
from store.models import Cell, Experiment, Run, RunMetadata, RunVariable, Sample


def built_server_experiment(tmp_path: Path, kind: str, name: str, body: str = "", *,
                            warmup: str = "2s", duration: str = "6s",
                            repetitions: int = 1) -> Path:
    """Write ``<tmp_path>/<name>.yaml`` on server ``kind`` and return its path: tpcc, 1
    warehouse, 2 connections, 2 s reports and samples, dirty pages not drained before a run.

    ``body`` is appended as written (dedented): an ``include`` of knobs, a ``matrix``.
    """
    path = tmp_path / f"{name}.yaml"
    path.write_text(textwrap.dedent(f"""\
        version: 1
        name: {name}
        server: {kind}
        base_config: small
        dataset: {{workload: tpcc, warehouses: 1}}
        workload:
          {{driver: tpcc, connections: 2, warmup: {warmup}, duration: {duration},
            report_interval: 2s}}
        sampling: {{interval: 2s}}
        repetitions: {repetitions}
        pre_run: {{drain_dirty_pages: false}}
        """) + textwrap.dedent(body))
    return path


def runs_of(db: ResultsDB, name: str) -> list[Run]:
    """The runs of the experiment called ``name``, in queue order, attempts in order."""
    with db.session() as s:
        return list(s.scalars(select(Run).join(Cell).join(Experiment)
                              .where(Experiment.name == name)
                              .order_by(Run.order_index, Run.attempt)))


@dataclass(frozen=True)
class RecordedRun:
    """What one run recorded: its row, the server's variables, its metadata, its samples."""

    run: Run
    #: ``SHOW GLOBAL VARIABLES`` right after the start, by name.
    variables: dict[str, str]
    metadata: RunMetadata | None
    #: The samples taken (the ticks the sampler missed are left out).
    samples: list[Sample]


def only_run(db: ResultsDB, name: str) -> RecordedRun:
    """The one run of experiment ``name``, with what it recorded (fails unless exactly one)."""
    (run,) = runs_of(db, name)
    with db.session() as s:
        variables = dict(s.execute(select(RunVariable.name, RunVariable.value)
                                   .where(RunVariable.run_id == run.id)).all())
        metadata = s.get(RunMetadata, run.id)
        samples = [x for x in s.scalars(select(Sample).where(Sample.run_id == run.id))
                   if not x.missed]
    return RecordedRun(run, variables, metadata, samples)


def assert_checkpoints_trail_redo(samples: Sequence[Sample]) -> None:
    """Every sample has an LSN and a checkpoint LSN not past it, and the workload wrote redo:
    some sample's checkpoint is behind its LSN."""
    for sample in samples:
        assert sample.lsn and sample.checkpoint_lsn and sample.lsn >= sample.checkpoint_lsn
    assert any(s.lsn > s.checkpoint_lsn for s in samples)  # the workload wrote redo
