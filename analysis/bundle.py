"""``flushbench bundle``: one experiment, everything it named and its report, in one file.

What a colleague or a post's reader needs to check a study: the results trimmed to the
experiment (the other experiments of the database removed from a consistent copy), the
experiment as queued, the base config and server profile texts it ran with, the report made
from the bundled database itself, the flushbench version and the environment facts of every
host that ran it. The archive format and its checks live in :mod:`store.bundles`.
"""

from __future__ import annotations

import datetime as dt
import platform
import re
import sqlite3
import tempfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import yaml

from analysis.reading.query import DB, ExperimentRef, host_rows, resolve_experiment, session_scope
from core.errors import AnalysisError
from core.experiment.spec import ExperimentSpec
from core.experiment.stored import StoredExperiment
from core.redaction import MASK, SECRET_SERVER_VARIABLES, redact, redact_url
from store.bundle_database import read_only, secret_variables_set, single_file, trimmed_copy
from store.bundle_manifest import BundleHost
from store.bundles import RESULTS, write_archive
from store.migrate import current_revision

#: Host facts a reader needs to judge comparability (one entry per distinct combination):
#: the keys of the manifest's host model, which ``open`` checks them against.
ENVIRONMENT = tuple(BundleHost.model_fields)


#: The bundle's copy of the experiment file given with ``--reference`` (verbatim).
REFERENCE = "reference.yaml"
#: Server variables whose value is a secret: the recorder masks them, but a database written
#: before it did (or by another tool) may hold one in clear, so the bundle checks again.
SECRET_VARIABLES = SECRET_SERVER_VARIABLES
#: plotly.js embedded in every report: its own source holds ``api_key=`` templates, which are
#: no credential of ours (the scan below skips this one script).
_PLOTLY_JS = re.compile(r"<script[^>]*>\s*/\*\*\s*\* plotly\.js v.*?</script>", re.S)


@dataclass(frozen=True)
class BundleReference:
    """An experiment file whose reference results the bundled report scores against.

    ``spec`` is that file validated (``core.experiment.loading.load_experiment(path)``: the
    CLI reads it); ``path`` is copied verbatim.
    """

    path: Path
    spec: ExperimentSpec


def _flushbench_version() -> str:
    try:
        return metadata.version("flushbench")
    except metadata.PackageNotFoundError:
        return "unknown"


def _describe(db: DB, experiment: ExperimentRef) -> dict[str, Any]:
    """Name, id, stored spec, files and per-host environment of the experiment."""
    with session_scope(db) as s:
        exp = resolve_experiment(s, experiment)
        rows = host_rows(s, exp.id, ENVIRONMENT)
        environment = [dict(zip(ENVIRONMENT, r, strict=True)) for r in sorted(set(rows))]
        return {"id": exp.id, "name": exp.name, "measurement_hash": exp.measurement_hash,
                "stored": StoredExperiment.from_row(exp), "files": exp.files or {},
                "created_at": exp.created_at,
                "environment": environment, "revision": current_revision(s.connection())}


def credentials_in(folder: Path) -> list[str]:
    """The files of an unpacked bundle (and rows of its database) holding a credential.

    A credential is whatever :func:`core.redaction.redact` would mask; the report's
    embedded plotly.js library is skipped (its own source carries ``api_key=`` templates).
    """
    found: list[str] = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        name = str(path.relative_to(folder))
        if path.name == RESULTS:
            with read_only(path) as conn:
                found += [f"{name}: {line.split('(', 1)[0][:60]}…" for line in conn.iterdump()
                          if redact(line) != line]
                found += [f"{name}: run_variables {n} is set"
                          for n in secret_variables_set(conn, SECRET_VARIABLES, MASK)]
        elif path.suffix in {".html", ".yaml", ".cnf", ".json", ".csv", ".txt"}:
            text = _PLOTLY_JS.sub("", path.read_text(errors="replace"))
            if redact(text) != text:
                found.append(name)
    return found


def _refuse_credentials(folder: Path, db_path: Path) -> None:
    leaks = credentials_in(folder)
    if leaks:
        raise AnalysisError(f"the bundle would carry a credential ({'; '.join(leaks[:3])})",
                            where=str(db_path), fix="remove it from the results database"
                            " (or the reference file) and bundle again; nothing was written")


def make_bundle(db_path: Path, experiment: ExperimentRef, target: Path, *,
                png: bool = True, reference: BundleReference | None = None) -> Path:
    """Write the bundle of one experiment of a SQLite results database to ``target``.

    With ``reference``, the report's scorecard uses that experiment file's reference results
    (``flushbench report --reference``) and the file goes into the bundle as
    ``reference.yaml``.

    Raises
    ------
    AnalysisError
        The experiment does not exist, the database is not a SQLite file (a PostgreSQL
        database is bundled by exporting it first; not supported yet), or a file of the
        bundle would carry a credential (nothing is written then).
    """
    from analysis.report.writer import write_report

    info = _describe(db_path, experiment)
    with tempfile.TemporaryDirectory(prefix="flushbench-bundle-") as tmp:
        folder = Path(tmp) / _folder_name(info["name"])
        folder.mkdir()
        counts = trimmed_copy(db_path, info["id"], folder / RESULTS)
        (folder / "experiment.yaml").write_text(
            f"# {info['name']} as it was queued ({info['created_at']})\n"
            + yaml.safe_dump(info["stored"].as_stored, sort_keys=False))
        files = info["files"]
        if isinstance(files.get("base_config"), dict) and files["base_config"].get("text"):
            (folder / "base_config.cnf").write_text(files["base_config"]["text"])
        if isinstance(files.get("server"), dict) and files["server"].get("profile"):
            (folder / "server.yaml").write_text(
                yaml.safe_dump(files["server"]["profile"], sort_keys=False))
        # Servers as a matrix axis: every profile a cell named (docs/servers.md).
        for index, (name, entry) in enumerate((files.get("servers") or {}).items()):
            if isinstance(entry, dict) and entry.get("profile"):
                (folder / f"server-{index}.yaml").write_text(
                    f"# server: {name}\n" + yaml.safe_dump(entry["profile"], sort_keys=False))
        if reference is not None:
            (folder / REFERENCE).write_bytes(reference.path.read_bytes())
        _refuse_credentials(folder, db_path)  # before the report: the data is where they come from
        write_report(folder / RESULTS, info["name"], folder / "report", png=png,
                     reference=None if reference is None else reference.spec)
        _refuse_credentials(folder / "report", db_path)
        # Reading the database for the report switched it to WAL, which left -wal/-shm files
        # beside it (they would go into the archive too).
        single_file(folder / RESULTS)
        manifest = {
            "bundle_format": 1,
            "experiment": {"name": info["name"], "measurement_hash": info["measurement_hash"]},
            "made_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "flushbench_version": _flushbench_version(),
            # Where the bundle was made (the hosts that ran the study are "environment").
            "made_with": {"python": platform.python_version(), "sqlite": sqlite3.sqlite_version,
                          "platform": platform.platform(terse=True)},
            "schema_revision": info["revision"],
            "reference": REFERENCE if reference is not None else None,
            "rows": counts,
            "environment": info["environment"],
        }
        return write_archive(folder, target, manifest)


def _folder_name(name: str) -> str:
    """The archive's top folder: the experiment name with anything odd replaced."""
    safe = "".join(c if c.isalnum() or c in "-_." else "-" for c in name).strip(".-")
    return safe or "experiment"


def database_file(url: str) -> Path:
    """The SQLite file behind a results URL, or an AnalysisError for a server database."""
    if not url.startswith("sqlite:///"):
        raise AnalysisError("bundle reads a SQLite results database", where=redact_url(url),
                            fix="export the experiment to SQLite first (not supported yet),"
                                " or bundle from a SQLite copy")
    return Path(url.removeprefix("sqlite:///"))

