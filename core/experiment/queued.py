"""What the queue keeps of an experiment, and what a worker replays exactly.

Its own module (not the queue's) so that admission can reuse stored translations and the
queue can store them without either importing the other.

The record has a format version, kept in every cell's stored translation (``"format": 2``,
:data:`FORMAT_VERSION`). Entries written before the record had one carry no ``format`` key:
they are read as :data:`LEGACY_FORMAT`, the one shape they all have (the translation's fields
beside ``server_version``); a version this flushbench does not know is refused.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from core.errors import StoreError
from core.experiment.cells import expand
from core.experiment.spec import CellSpec, ExperimentSpec
from core.experiment.translation import Translation

#: The format this flushbench writes: ``{"format": 2, "server_version": …, **translation}``.
FORMAT_VERSION = 2
#: Entries without a ``format`` key: ``{"server_version": …, **translation}`` as the
#: translation's fields were when it was written (some may since have been added).
LEGACY_FORMAT = 1
#: The formats this flushbench reads.
KNOWN_FORMATS = (LEGACY_FORMAT, FORMAT_VERSION)
_TRANSLATION_FIELDS = frozenset(f.name for f in dataclasses.fields(Translation))


@dataclass(frozen=True)
class StoredTranslation:
    """One cell's stored translation, read: the binary it was checked against and the
    translation, or None when its fields are not this flushbench's (it is translated again)."""

    server_version: str | None
    translation: Translation | None


def record_format(entry: dict[str, Any]) -> int:
    """The record format of one stored cell entry: its ``format``, else the legacy one."""
    return entry.get("format", LEGACY_FORMAT)


def read_translation_entry(entry: dict[str, Any], where: str) -> StoredTranslation:
    """Read one cell's stored translation in its own format.

    Both formats hold the translation's fields beside ``server_version``; an entry with a
    field this flushbench's :class:`Translation` lacks (written when a field existed that has
    since gone) is kept as ``translation=None``: preflight translates that cell again.

    Raises
    ------
    StoreError
        The entry names a format this flushbench does not know (a newer flushbench queued it).
    """
    version = record_format(entry)
    if version not in KNOWN_FORMATS:
        raise StoreError(
            f"the queued record is in format {version!r}, which this flushbench does not"
            f" read (it reads formats {', '.join(map(str, KNOWN_FORMATS))})", where=where,
            fix="run the worker with the flushbench that queued it, or queue the experiment"
                " again with this one (`flushbench queue add FILE`)")
    fields = {k: v for k, v in entry.items() if k not in ("format", "server_version")}
    translation = Translation(**fields) if set(fields) <= _TRANSLATION_FIELDS else None
    return StoredTranslation(entry.get("server_version"), translation)


@dataclass(frozen=True)
class QueuedExperiment:
    """What ``queue add`` (or ``run``) stores of one experiment, and a worker replays exactly.

    A worker elsewhere, days later, must run what preflight checked — not whatever the paths
    hold by then. So the queue keeps the validated spec, the files it named as preflight read
    them (:meth:`PreflightReport.queued_files`), and per cell the translation preflight
    checked with the server version it was checked against (:meth:`translation_entry`).
    :func:`runner.admission.queue_record.load_queued` reads it back, preflight reads the files
    from it (never from disk) and :meth:`reusable` hands preflight the translations this host's
    binary may reuse.
    """

    exp: ExperimentSpec
    #: The experiment file's path, stored for the record.
    source: str
    cells: list[CellSpec]
    #: Cell key → :meth:`translation_entry` (empty: every cell is translated again).
    translations: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: The base config's text and the server profile(s), as preflight read them
    #: (``PreflightReport.queued_files``); part of the measurement hash, so editing either
    #: makes a new measurement.
    files: dict[str, Any] | None = None

    @staticmethod
    def translation_entry(server_version: str, translation: Translation) -> dict[str, Any]:
        """What the queue keeps per cell, in :data:`FORMAT_VERSION`: the translation and the
        binary it was checked against (its ``--version`` line)."""
        return {"format": FORMAT_VERSION, "server_version": server_version,
                **dataclasses.asdict(translation)}

    @staticmethod
    def reusable(stored: dict[str, dict] | None, server_version: str,
                 cells: list[CellSpec]) -> dict[str, Translation] | None:
        """The stored translations, when every cell has one made for this very binary in a
        shape this flushbench reads (:func:`read_translation_entry`)."""
        if not stored:
            return None
        out = {}
        for cell in cells:
            entry = stored.get(cell.key)
            if not entry:
                return None
            read = read_translation_entry(entry, where=f"cells.cell_key={cell.key}")
            if read.server_version != server_version or read.translation is None:
                return None
            out[cell.key] = read.translation
        return out

    @classmethod
    def from_stored(cls, experiment_id: int, name: str, spec: dict[str, Any], source: str,
                    files: dict[str, Any] | None,
                    translations: dict[str, dict[str, Any]]) -> QueuedExperiment:
        """A queued experiment from its stored rows; the spec is validated again (cheap, and a
        newer flushbench may read an older row) and its cells expanded.

        Raises
        ------
        StoreError
            The experiment was queued without its base config and server profile, or a
            cell's translation is in a record format this flushbench does not read.
        """
        if not files or "base_config" not in files or not ({"server", "servers"} & set(files)):
            raise StoreError(
                f"experiment {name!r} was queued without its base config and server profile",
                where=f"experiments.id={experiment_id}",
                fix="queue it again with this flushbench (`flushbench queue add FILE`): a worker"
                    " runs what was queued, never whatever the paths hold now",
            )
        for key, entry in translations.items():
            if entry:  # refuse a format this flushbench does not read before anything runs
                read_translation_entry(entry, where=f"experiments.id={experiment_id}, cell {key}")
        exp = ExperimentSpec.model_validate(spec)
        return cls(exp, source, expand(exp, source), translations, files)
