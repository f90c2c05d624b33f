"""``QueuedExperiment``: what ``queue add`` stores of an experiment is what a worker reads back
(spec, source, cells, per-cell translations, the files), on a real SQLite results database;
which stored translations a worker's binary may reuse, as a table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core.errors import StoreError
from core.experiment.cells import expand
from core.experiment.hashes import measurement_hash
from core.experiment.queued import (
    FORMAT_VERSION,
    LEGACY_FORMAT,
    QueuedExperiment,
    read_translation_entry,
    record_format,
)
from core.experiment.spec import ExperimentSpec
from core.experiment.translation import Translation
from runner.admission.queue_record import enqueue, load_queued
from store.db import ResultsDB
from store.models import Experiment

VERSION = "10.11.19-MariaDB-0+deb12u1"
PROFILE = {"name": "mariadb-debian", "flavor": "mariadb", "mysqld": "/usr/sbin/mariadbd"}


def spec(name: str = "kept") -> ExperimentSpec:
    return ExperimentSpec.model_validate({
        "version": 1, "name": name, "dataset": {"workload": "tpcc", "warehouses": 1},
        "matrix": {"max_dirty_pages_pct": [50, 60]},
    })


def queued(files: dict[str, Any] | None = None) -> QueuedExperiment:
    exp = spec()
    cells = expand(exp, "kept.yaml")
    translations = {
        c.key: QueuedExperiment.translation_entry(VERSION, Translation(
            server_options={"innodb_max_dirty_pages_pct": str(c.knobs["max_dirty_pages_pct"])},
            expected={"innodb_max_dirty_pages_pct": str(c.knobs["max_dirty_pages_pct"])}))
        for c in cells}
    files = files if files is not None else {
        "base_config": {"name": "small", "text": "[mysqld]\nskip-name-resolve\n"},
        "server": {"name": "mariadb-debian", "profile": PROFILE},
    }
    return QueuedExperiment(exp, "experiments/kept.yaml", cells, translations, files)


def test_what_is_queued_is_what_a_worker_reads_back(tmp_path: Path) -> None:
    db = ResultsDB(tmp_path / "r.sqlite")
    stored = queued()
    exp_id = enqueue(db, stored).experiment_id
    back = load_queued(db, exp_id)
    # The spec is stored as its JSON dump and validated again on the way back.
    assert back.exp.model_dump(mode="json") == stored.exp.model_dump(mode="json")
    assert back.source == stored.source
    assert back.files == stored.files
    assert back.translations == stored.translations
    assert [c.key for c in back.cells] == [c.key for c in stored.cells]
    with db.session() as s:
        row = s.get(Experiment, exp_id)
        assert row is not None
        assert row.measurement_hash == measurement_hash(back.exp, back.files)
    # The stored translations are the ones this very binary may run again.
    reused = QueuedExperiment.reusable(back.translations, VERSION, back.cells)
    assert reused is not None
    assert {k: t.server_options for k, t in reused.items()} == {
        c.key: {"innodb_max_dirty_pages_pct": str(c.knobs["max_dirty_pages_pct"])}
        for c in back.cells}


@pytest.mark.parametrize("files", [None, {}, {"base_config": {"name": "x", "text": ""}},
                                   {"server": {"name": "s", "profile": PROFILE}}],
                         ids=["none", "empty", "no-server", "no-base-config"])
def test_an_experiment_queued_without_its_files_is_refused(tmp_path: Path,
                                                          files: dict | None) -> None:
    db = ResultsDB(tmp_path / "r.sqlite")
    exp_id = enqueue(db, QueuedExperiment(spec(), "kept.yaml", expand(spec(), "kept.yaml"),
                                          files=files)).experiment_id
    with pytest.raises(StoreError, match="queued without its base config and server profile"):
        load_queued(db, exp_id)


def test_an_unknown_experiment_is_refused(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no experiment 7"):
        load_queued(ResultsDB(tmp_path / "r.sqlite"), 7)


def _entry(**changes: Any) -> dict[str, Any]:
    return {**QueuedExperiment.translation_entry(VERSION, Translation()), **changes}


def _legacy(**changes: Any) -> dict[str, Any]:
    """An entry as flushbench wrote it before the record had a format: no ``format`` key."""
    return {k: v for k, v in _entry(**changes).items() if k != "format"}


#: stored translations per cell (None: the cell has none) → reused or checked again.
REUSE_TABLE = [
    ("same binary", [_entry(), _entry()], True),
    ("another binary", [_entry(), _entry(server_version="5.5.62")], False),
    ("no version (an older queue)", [_entry(), {k: v for k, v in _entry().items()
                                               if k != "server_version"}], False),
    ("a field this flushbench does not know", [_entry(), _entry(knob_of_the_future=1)], False),
    ("written before the record had a format (legacy)", [_entry(), _legacy()], True),
    ("legacy, another binary", [_entry(), _legacy(server_version="5.5.62")], False),
    ("legacy, with a field that has since gone", [_entry(), _legacy(old_field=1)], False),
    ("a cell without one", [_entry(), None], False),
]


@pytest.mark.parametrize(("entries", "reused"), [row[1:] for row in REUSE_TABLE],
                         ids=[row[0] for row in REUSE_TABLE])
def test_which_stored_translations_a_binary_reuses(entries: list, reused: bool) -> None:
    cells = expand(spec(), "kept.yaml")
    stored = {c.key: e for c, e in zip(cells, entries, strict=True) if e is not None}
    result = QueuedExperiment.reusable(stored, VERSION, cells)
    assert (result is not None) is reused
    assert QueuedExperiment.reusable({}, VERSION, cells) is None  # nothing stored


def test_the_record_names_its_format_and_a_legacy_entry_reads_as_format_1() -> None:
    assert _entry()["format"] == FORMAT_VERSION == 2
    assert record_format(_legacy()) == LEGACY_FORMAT == 1
    read = read_translation_entry(_legacy(), where="here")
    assert read.server_version == VERSION and read.translation == Translation()


@pytest.mark.parametrize("version", [3, 0, "2"])
def test_an_unknown_record_format_is_refused_naming_it_and_the_fix(version: object) -> None:
    cells = expand(spec(), "kept.yaml")
    stored = {c.key: _entry(format=version) for c in cells}
    with pytest.raises(StoreError) as err:
        QueuedExperiment.reusable(stored, VERSION, cells)
    assert f"format {version!r}" in err.value.what
    assert "reads formats 1, 2" in err.value.what
    assert "queue the experiment again" in (err.value.fix or "")


def test_a_worker_refuses_a_queue_in_an_unknown_format_before_anything_runs(
        tmp_path: Path) -> None:
    db = ResultsDB(tmp_path / "r.sqlite")
    stored = queued()
    future = {k: {**e, "format": 3} for k, e in stored.translations.items()}
    exp_id = enqueue(db, QueuedExperiment(stored.exp, stored.source, stored.cells, future,
                                          stored.files)).experiment_id
    with pytest.raises(StoreError, match=r"format 3, which this flushbench does not read"):
        load_queued(db, exp_id)


def test_the_committed_studies_queued_records_read_as_their_format() -> None:
    """The committed databases queued before the record had a format read as format 1, those
    queued since as the format they name; every cell's translation whole (a worker resuming
    a study's queue reuses it)."""
    import sqlite3

    root = Path(__file__).parents[3] / "docs"
    databases = sorted(root.glob("study-*/*.sqlite"))
    assert databases
    formats = set()
    for path in databases:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
            rows = conn.execute("SELECT cell_key, variables FROM cells").fetchall()
        assert rows, path
        for key, text in rows:
            entry = json.loads(text)
            formats.add(record_format(entry))
            assert record_format(entry) == entry.get("format", LEGACY_FORMAT), (path, key)
            read = read_translation_entry(entry, where=str(path))
            assert read.translation is not None and read.server_version, (path, key)
    assert LEGACY_FORMAT in formats  # the studies queued before the format was written
