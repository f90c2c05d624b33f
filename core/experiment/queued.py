"""What the queue keeps of an experiment, and what a worker replays exactly.

Its own module (not the queue's) so that admission can reuse stored translations and the
queue can store them without either importing the other.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.errors import StoreError
from core.experiment.cells import expand
from core.experiment.spec import CellSpec, ExperimentSpec
from core.experiment.translation import Translation


@dataclass(frozen=True)
class QueuedExperiment:
    """What ``queue add`` (or ``run``) stores of one experiment, and a worker replays exactly.

    A worker elsewhere, days later, must run what preflight checked — not whatever the paths
    hold by then. So the queue keeps the validated spec, the files it named as preflight read
    them (:meth:`PreflightReport.queued_files`), and per cell the translation preflight
    checked with the server version it was checked against (:meth:`translation_entry`).
    :func:`runner.fleet.queue.load_queued` reads it back, :meth:`write_files` puts the files
    where preflight reads them again, and :meth:`reusable` hands preflight the translations
    this host's binary may reuse.
    """

    exp: ExperimentSpec
    #: The experiment file's path, stored for the record.
    source: str
    cells: list[CellSpec]
    #: Cell key → :meth:`translation_entry` (empty: every cell is translated again).
    translations: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: The base config's text and the server profile(s) (:meth:`files_of`); part of the
    #: measurement hash, so editing either makes a new measurement.
    files: dict[str, Any] | None = None

    @staticmethod
    def translation_entry(server_version: str, translation: Translation) -> dict[str, Any]:
        """What the queue keeps per cell: the translation and the binary it was checked
        against (its ``--version`` line)."""
        return {"server_version": server_version, **dataclasses.asdict(translation)}

    @staticmethod
    def reusable(stored: dict[str, dict] | None, server_version: str,
                 cells: list[CellSpec]) -> dict[str, Translation] | None:
        """The stored translations, when every cell has one made for this very binary."""
        if not stored:
            return None
        out = {}
        for cell in cells:
            entry = dict(stored.get(cell.key) or {})
            if entry.pop("server_version", None) != server_version:
                return None
            try:
                out[cell.key] = Translation(**entry)
            except TypeError:  # stored by an older flushbench: check it all again
                return None
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
            The experiment was queued without its base config and server profile.
        """
        if not files or "base_config" not in files or not ({"server", "servers"} & set(files)):
            raise StoreError(
                f"experiment {name!r} was queued without its base config and server profile",
                where=f"experiments.id={experiment_id}",
                fix="queue it again with this flushbench (`flushbench queue add FILE`): a worker"
                    " runs what was queued, never whatever the paths hold now",
            )
        exp = ExperimentSpec.model_validate(spec)
        return cls(exp, source, expand(exp, source), translations, files)

    def write_files(self, folder: Path) -> tuple[ExperimentSpec, dict[str, Path]]:
        """Copies of the files the experiment was queued with (written in ``folder``): the
        experiment pointing at the base config's copy, and server name → its profile's copy."""
        import yaml  # only a worker replaying a queued experiment needs it

        assert self.files is not None
        folder.mkdir(parents=True, exist_ok=True)
        base = folder / "base.cnf"
        base.write_text(self.files["base_config"]["text"], encoding="utf-8")
        entries = self.files.get("servers") or {self.files["server"]["name"]:
                                                self.files["server"]}
        profile_files: dict[str, Path] = {}
        for index, (name, entry) in enumerate(entries.items()):
            profile = folder / f"server-{index}.yaml"
            profile.write_text(yaml.safe_dump(entry["profile"], sort_keys=False),
                               encoding="utf-8")
            profile_files[name] = profile
        return self.exp.model_copy(update={"base_config": str(base)}), profile_files
