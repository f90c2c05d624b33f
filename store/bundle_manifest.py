"""A bundle's ``MANIFEST.json`` as a typed model, and its figures checked against the database.

The manifest comes from someone else's file, so it is parsed into :class:`BundleManifest`
(strict types: a list where a mapping belongs, a missing ``experiment``, a host without its
keys is one sentence naming the bundle and the key), its paths must be relative paths inside
the bundle (never ``/proc/kcore`` or ``../../etc/hostname``), and what it says of the data —
the rows of every table, the schema revision — is checked against the bundled database
(:func:`check_database`) rather than repeated on trust. ``analysis/bundle.py`` writes the
manifest; ``store/bundles.py`` reads it.

Keys this flushbench does not know are ignored: a newer flushbench may add one without
changing what the others mean (a change of meaning is a new ``bundle_format``).
"""

from __future__ import annotations

import datetime as dt
import sqlite3
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    NonNegativeInt,
    StringConstraints,
    ValidationError,
    field_validator,
    model_validator,
)

from core.errors import StoreError, quote
from core.validation import KeyedValueError, problem_message

MANIFEST = "MANIFEST.json"
RESULTS = "results.sqlite"
#: Printable text of a bounded length (it is printed by `flushbench open`).
Text = Annotated[str, StringConstraints(max_length=255, pattern=r"^[^\x00-\x1f\x7f-\x9f]*$")]
Sha256 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
Version = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9.+!_-]{0,63}$")]
Revision = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_]{1,64}$")]
TableName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")]


def _inside_bundle(path: str) -> str:
    """A manifest path must name a file inside the bundle: relative, plain parts."""
    parts = path.split("/")
    if path.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise ValueError("not a relative path inside the bundle")
    if any(ord(c) < 0x20 or c in "\x7f\\" for c in path) or len(path) > 4096:
        raise ValueError("not a plain path (control characters, a backslash, or too long)")
    if path == MANIFEST:
        raise ValueError("the manifest does not list itself")
    return path


BundlePath = Annotated[str, AfterValidator(_inside_bundle)]


class _Model(BaseModel):
    model_config = ConfigDict(strict=True, frozen=True, extra="ignore")


class BundleHost(_Model):
    """The environment of one host that ran the study (one distinct combination)."""

    hostname: Text
    kernel: Text
    cpu_model: Text
    cpu_count: NonNegativeInt
    mem_total_bytes: NonNegativeInt
    datadir_device: Text
    datadir_fstype: Text
    server_flavor: Text
    server_version: Text
    dataset_key: Text
    driver: Text


class BundleExperiment(_Model):
    """The experiment the bundle holds."""

    name: Annotated[Text, StringConstraints(min_length=1)]
    measurement_hash: Text | None = None


class MadeWith(_Model):
    """Where the bundle was made (not where the study ran)."""

    python: Text
    sqlite: Text
    platform: Text


class BundleManifest(_Model):
    """``MANIFEST.json``: what a bundle holds and says of itself."""

    bundle_format: Literal[1]
    experiment: BundleExperiment
    made_at: dt.datetime
    flushbench_version: Version
    made_with: MadeWith | None = None
    schema_revision: Revision
    #: The experiment file the bundled report scored against (a path in ``files``).
    reference: BundlePath | None = None
    #: Rows per table of the bundled database.
    rows: dict[TableName, NonNegativeInt]
    environment: list[BundleHost]
    #: Every file of the bundle but the manifest: path → sha256.
    files: dict[BundlePath, Sha256]

    @field_validator("files")
    @classmethod
    def _has_results(cls, files: dict[str, str]) -> dict[str, str]:
        if RESULTS not in files:
            raise ValueError(f"lists no {RESULTS} (a bundle holds its results database)")
        return files

    @model_validator(mode="after")
    def _reference_is_listed(self) -> BundleManifest:
        if self.reference is not None and self.reference not in self.files:
            raise KeyedValueError(f"{quote(self.reference)} is not among the files", "reference")
        return self


def _key_path(err: dict[str, Any]) -> str:
    """Where a problem is, as ``environment[0].kernel`` or ``files['/proc/kcore']``."""
    loc = list(err["loc"])
    cause = (err.get("ctx") or {}).get("error")
    if isinstance(cause, KeyedValueError):
        loc += cause.loc
    out = ""
    for part in loc:
        if part == "[key]":  # pydantic's marker: the problem is the mapping key before it
            continue
        if isinstance(part, int):
            out += f"[{part}]"
        elif str(part).isidentifier():
            out += ("." if out else "") + str(part)
        else:
            out += f"[{quote(str(part))}]"
    return out or "(top level)"


def parse_manifest(data: bytes, where: str) -> BundleManifest:
    """The manifest's bytes as a :class:`BundleManifest`, or one StoreError naming the key.

    ``where`` names the bundle as the user named it.
    """
    fix = "make bundles with `flushbench bundle` (this manifest was changed or made elsewhere)"
    try:
        return BundleManifest.model_validate_json(data)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        first = errors[0]
        if first["type"] == "json_invalid":
            raise StoreError(f"the bundle's {MANIFEST} is not valid JSON", where=where,
                             fix=fix) from None
        more = f" (and {len(errors) - 1} more problems)" if len(errors) > 1 else ""
        raise StoreError(f"the bundle's {MANIFEST} is invalid at {_key_path(first)}:"
                         f" {problem_message(first)}{more}", where=where, fix=fix) from None


def _read_only(db: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"{db.absolute().as_uri()}?mode=ro", uri=True)


def _revision(conn: sqlite3.Connection) -> str | None:
    has_table = conn.execute("SELECT 1 FROM sqlite_master WHERE type='table'"
                             " AND name='alembic_version'").fetchone()
    row = conn.execute("SELECT version_num FROM alembic_version").fetchone() if has_table else None
    return row[0] if row else None


def database_revision(db: Path) -> str | None:
    """A SQLite file's schema revision (None: no flushbench schema), read without writing.

    Raises ``sqlite3.DatabaseError`` for a file that is not a readable SQLite database.
    """
    conn = _read_only(db)
    try:
        return _revision(conn)
    finally:
        conn.close()


def database_figures(db: Path) -> tuple[str | None, dict[str, int]]:
    """A SQLite file's schema revision and rows per table, read without writing to it.

    Raises ``sqlite3.DatabaseError`` for a file that is not a readable SQLite database.
    """
    conn = _read_only(db)
    try:
        names = [r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'")]
        rows = {n: conn.execute('SELECT COUNT(*) FROM "{}"'.format(n.replace('"', '""')))
                .fetchone()[0] for n in names}
        return _revision(conn), rows
    finally:
        conn.close()


def check_database(manifest: BundleManifest, db: Path, where: str) -> None:
    """The bundled database must hold what the manifest says: its schema revision and the
    rows of every table (a StoreError naming the bundle and the first difference)."""
    fix = ("the bundle was changed after it was made: copy it again from where it came from,"
           " or make it again with `flushbench bundle`")
    try:
        revision, rows = database_figures(db)
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"the bundle's {RESULTS} is not a readable SQLite database ({exc})",
                         where=where, fix=fix) from None
    if revision != manifest.schema_revision:
        raise StoreError(f"the bundle's manifest says schema revision"
                         f" {manifest.schema_revision}, its database is at {revision}",
                         where=where, fix=fix)
    for table in sorted(set(rows) | set(manifest.rows)):
        said, held = manifest.rows.get(table), rows.get(table)
        if said == held:
            continue
        if said is None:
            what = f"its database holds a table {table} ({held:,} rows) the manifest does not count"
        elif held is None:
            what = f"the manifest counts {said:,} rows in a table {table} its database lacks"
        else:
            what = f"the manifest counts {said:,} rows in {table}, its database holds {held:,}"
        raise StoreError(f"the bundle's figures do not match: {what}", where=where, fix=fix)
