"""A stored experiment read back: the typed reader the analysis and the CLI use.

The store keeps each experiment's validated spec as its JSON dump (``experiments.spec``).
Whoever reads it back reads it through :class:`StoredExperiment`: the spec validated again as
:class:`~core.experiment.spec.ExperimentSpec` (typed attributes, defaults filled for keys added
after it was stored), or — to publish or print it as stored — :attr:`StoredExperiment.as_stored`.
No module outside this package reads the stored spec as a dict (tests/test_layers.py).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from core.errors import StoreError
from core.experiment.spec import ExperimentSpec


@dataclass(frozen=True)
class StoredExperiment:
    """One experiment row's spec, as stored and as the typed model.

    ``experiment_id`` and ``name`` say which row it is, in the error of a spec that no
    longer validates.
    """

    experiment_id: int | None
    name: str
    stored_spec: dict[str, Any] = field(repr=False)

    @classmethod
    def from_row(cls, row: Any) -> StoredExperiment:
        """From the store's experiment row (:class:`store.models.Experiment`, or any object
        with ``id``, ``name`` and ``spec``)."""
        return cls(getattr(row, "id", None), row.name, row.spec or {})

    @cached_property
    def spec(self) -> ExperimentSpec:
        """The stored spec, validated again as the typed model.

        Raises
        ------
        StoreError
            The stored spec does not validate with this flushbench (its first problem).
        """
        from pydantic import ValidationError

        try:
            # "stored": what a file may not say but a record may hold does not refuse it (a
            # reference URL with credentials, a long source: read, and every report masks them).
            return ExperimentSpec.model_validate(self.stored_spec, context={"stored": True})
        except ValidationError as exc:
            problem = exc.errors()[0]
            raise StoreError(
                f"the stored spec of experiment {self.name!r} does not validate:"
                f" {problem['msg']}", where=f"experiments.id={self.experiment_id}",
                fix="read it with the flushbench that stored it") from None

    @property
    def as_stored(self) -> dict[str, Any]:
        """A copy of the spec exactly as stored (to publish or print it unchanged; every
        other use reads :attr:`spec`)."""
        return copy.deepcopy(self.stored_spec)
