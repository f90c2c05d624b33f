"""What one run of a real-server test recorded, read back, and the experiment file of the
built servers' tests (MySQL 5.5, XtraDB 5.5, Percona 5.5 from ``scripts/build-server.sh``).

Shared by the end-to-end tests of the built, the fetched (Debian) and the added (binary
distribution) servers: the same read-back, the same redo checks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import select

from store.db import ResultsDB
from store.models import Cell, Experiment, Run, RunMetadata, RunVariable, Sample
from tests.support.tiny_experiment import tiny_tpcc_experiment


def built_server_experiment(tmp_path: Path, kind: str, name: str, body: str = "", *,
                            warmup: str = "2s", duration: str = "6s",
                            repetitions: int = 1) -> Path:
    """Write ``<tmp_path>/<name>.yaml`` on server ``kind`` and return its path: tpcc, 1
    warehouse, 2 connections, 2 s reports and samples, dirty pages not drained before a run.

    ``body`` is appended as written (dedented): an ``include`` of knobs, a ``matrix``.
    """
    return tiny_tpcc_experiment(tmp_path, name, body, server=kind, warmup=warmup,
                                duration=duration, repetitions=repetitions, connections=2)


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
    #: The samples taken, in order (the ticks the sampler missed are left out).
    samples: list[Sample]


def only_run(db: ResultsDB, name: str) -> RecordedRun:
    """The one run of experiment ``name``, with what it recorded (fails unless exactly one)."""
    (run,) = runs_of(db, name)
    with db.session() as s:
        variables = dict(s.execute(select(RunVariable.name, RunVariable.value)
                                   .where(RunVariable.run_id == run.id)).all())
        metadata = s.get(RunMetadata, run.id)
        samples = [x for x in s.scalars(select(Sample).where(Sample.run_id == run.id)
                                        .order_by(Sample.seq)) if not x.missed]
    return RecordedRun(run, variables, metadata, samples)


def assert_checkpoints_trail_redo(samples: Sequence[Sample]) -> None:
    """Every sample has an LSN and a checkpoint LSN not past it, and the workload wrote redo:
    some sample's checkpoint is behind its LSN."""
    for sample in samples:
        assert sample.lsn and sample.checkpoint_lsn and sample.lsn >= sample.checkpoint_lsn
    assert any(s.lsn > s.checkpoint_lsn for s in samples)  # the workload wrote redo
