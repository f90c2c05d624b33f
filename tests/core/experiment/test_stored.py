"""StoredExperiment: a stored spec read back typed, published as stored, and refused by name
when it no longer validates."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from core.errors import StoreError
from core.experiment.stored import StoredExperiment

STORED = {"version": 1, "name": "kept", "dataset": {"workload": "tpcc", "warehouses": 2},
          "workload": {"driver": "tpcc", "connections": 8}, "repetitions": 3}


def _row(spec: dict) -> SimpleNamespace:
    return SimpleNamespace(id=7, name="kept", spec=spec)


def test_the_stored_spec_reads_typed_and_publishes_as_stored() -> None:
    stored = StoredExperiment.from_row(_row(STORED))
    assert stored.spec.workload.connections == 8 and stored.spec.repetitions == 3
    assert stored.spec.order.mode == "as-written"  # a key it never stored: the default
    copy = stored.as_stored
    assert copy == STORED and copy is not stored.stored_spec
    copy["name"] = "changed"
    assert stored.as_stored["name"] == "kept"


def test_what_a_record_may_hold_but_a_file_may_not_is_read() -> None:
    """A reference URL with credentials or a long source (refused in a file today) is read
    from a record; the report masks what it shows."""
    spec = {**STORED, "reference": {"source": "s" * 400,
                                    "url": "https://u:secret@example.com/post"}}
    assert StoredExperiment.from_row(_row(spec)).spec.reference.source == "s" * 400


def test_a_stored_spec_that_does_not_validate_is_refused_by_name() -> None:
    with pytest.raises(StoreError) as err:
        _ = StoredExperiment.from_row(_row({**STORED, "repetitions": 0})).spec
    assert "experiment 'kept'" in err.value.what and err.value.where == "experiments.id=7"
