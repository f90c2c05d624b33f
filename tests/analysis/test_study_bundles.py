"""The committed studies as bundles (issue 26, item 3): ``scripts/study_bundles.py pack``
bundles each study's recorded database; ``flushbench report`` from that bundle lists the same
figures and prints the same numbers in its tables as from the database directly; the bundle
records the flushbench version and the environment facts, carries no credential (and a
planted one stops the bundle), regenerates the study folder (``unpack``), and a truncated or
corrupted bundle is refused naming the file and the fix."""

from __future__ import annotations

import importlib.util
import io
import json
import re
import sqlite3
import sys
import tarfile
from importlib import metadata
from pathlib import Path
from types import ModuleType

import pytest

from analysis.bundle import ENVIRONMENT, credentials_in
from store.bundles import MANIFEST, RESULTS
from tests.support.cli_runner import CliRun, exit_code_of
from tests.support.recorded import ROOT, recorded_copy


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("study_bundles",
                                                  ROOT / "scripts" / "study_bundles.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


#: Three reports per study (in the bundle, from it, from the database): seconds each.
pytestmark = pytest.mark.slow
SCRIPT = _script()
#: recorded.py's name of each study's database.
RECORDED_NAME = {"study-2011": "stability-2011", "allocators": "allocators"}


def _flushbench_in_this_process(*args: str) -> None:
    """The script's ``flushbench(*args)``, run through the same entry point in this process.

    ``pack`` runs two commands (``db upgrade``, ``bundle``); as subprocesses each pays an
    interpreter start and flushbench's imports, which this process has already paid. The
    command line, the entry point (``flushbench.cli.main``, the console script's function
    with its error boundary) and the rule that a failure stops the script are the script's
    own; its subprocess runner itself is what ``test_unpack_regenerates_the_study_folder``
    goes through (``unpack`` runs ``flushbench open`` as the script does).
    """
    print("$", " ".join(["flushbench", *args]), flush=True)
    code = exit_code_of(list(args))
    if code != 0:
        raise SCRIPT.StudyError(f"`flushbench {args[0]}` failed (its message is above)")


@pytest.fixture(scope="module", params=list(SCRIPT.STUDIES))
def packed(request: pytest.FixtureRequest,
           tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path, Path]:
    """(study, its recorded copy, the bundle ``pack`` made of it without PNGs)."""
    name = request.param
    db = recorded_copy(RECORDED_NAME[name], tmp_path_factory)
    out = tmp_path_factory.mktemp(f"packed-{name}")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(SCRIPT, "flushbench", _flushbench_in_this_process)
        return name, db, SCRIPT.pack(name, out, png=False, source=db)


@pytest.fixture(scope="module")
def opened(packed: tuple[str, Path, Path],
           tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of the ``packed`` bundle, unpacked once (the tests only read it)."""
    study, _, bundle = packed
    return _unpacked(bundle, tmp_path_factory.mktemp(f"opened-{study}"))


def _unpacked(bundle: Path, into: Path) -> Path:
    import zstandard

    with bundle.open("rb") as raw, zstandard.ZstdDecompressor().stream_reader(raw) as zst:
        data = zst.read()
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
        tar.extractall(into, filter="data")
    return next(into.iterdir())


_FIGURE = re.compile(r'id="(fig-[^"]+)"')
_CELL = re.compile(r"<t[dh][^>]*>(.*?)</t[dh]>", re.S)
_NUMBER = re.compile(r"[-+]?\d[\d,]*(?:\.\d+)?")


def _figures_and_numbers(report: Path) -> tuple[list[str], list[list[str]]]:
    """The figure ids in page order, and every table cell's numbers, cell by cell."""
    page = re.sub(r"<script.*?</script>", "", report.read_text(), flags=re.S)  # plotly.js
    cells = [re.sub(r"<[^>]+>", "", c) for c in _CELL.findall(page)]
    return _FIGURE.findall(page), [_NUMBER.findall(c) for c in cells]


def _report(cli: CliRun, study: str, db: Path, out: Path) -> Path:
    experiment = SCRIPT.STUDIES[study].experiment
    reference = SCRIPT.STUDIES[study].reference
    args = ["report", experiment, "--db", str(db), "-o", str(out), "--no-png"]
    code, _, err = cli(args + (["--reference", str(ROOT / reference)] if reference else []))
    assert code == 0, err
    return out / "report.html"


def test_report_from_the_bundle_has_the_same_figures_and_numbers(
        packed: tuple[str, Path, Path], opened: Path, tmp_path: Path, cli: CliRun,
        monkeypatch: pytest.MonkeyPatch) -> None:
    study, db, bundle = packed
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    direct = _figures_and_numbers(_report(cli, study, db, tmp_path / "direct"))
    from_bundle = _figures_and_numbers(_report(cli, study, bundle, tmp_path / "bundle"))
    inside = _figures_and_numbers(opened / "report" / "report.html")
    figures, numbers = direct
    assert len(figures) >= 20 and sum(map(len, numbers)) > 500
    assert from_bundle == direct
    assert inside == direct
    # The tables hold the numbers the study's README quotes (so the comparison compares).
    quoted = {"study-2011": "7,414", "allocators": "3,124"}[study]
    assert any(quoted in cell for cell in numbers)


def test_manifest_records_version_and_environment(packed: tuple[str, Path, Path],
                                                  opened: Path) -> None:
    study, db, _ = packed
    folder = opened
    manifest = json.loads((folder / MANIFEST).read_text())
    assert manifest["flushbench_version"] == metadata.version("flushbench")
    assert set(manifest["made_with"]) == {"python", "sqlite", "platform"}
    conn = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)
    try:
        hosts = set(conn.execute("SELECT hostname, server_version FROM run_metadata"))
    finally:
        conn.close()
    environment = manifest["environment"]
    assert {(e["hostname"], e["server_version"]) for e in environment} == hosts
    assert all(set(e) == set(ENVIRONMENT) and all(v not in (None, "") for v in e.values())
               for e in environment)
    reference = SCRIPT.STUDIES[study].reference
    if reference:
        assert manifest["reference"] == "reference.yaml"
        assert (folder / "reference.yaml").read_bytes() == (ROOT / reference).read_bytes()
    else:
        assert manifest["reference"] is None and not (folder / "reference.yaml").exists()
    assert {"experiment.yaml", "base_config.cnf", "server.yaml", RESULTS} <= set(
        manifest["files"])
    # One self-contained database file: no WAL left beside it by the report's reading.
    assert not [n for n in manifest["files"] if n.endswith(("-wal", "-shm"))]
    assert (folder / RESULTS).read_bytes()[18:20] == b"\x01\x01"  # rollback journal


#: What a credential looks like in text (redaction.py masks these forms and more).
_SECRET = re.compile(rb"passw(or)?d\s*[=:]|\bpwd=|MYSQL_PWD|PGPASSWORD|://[^/\s:@\"']+:[^/\s@\"']+@"
                     rb"|--password|\bsecret\s*[=:]", re.I)
_PLOTLY_JS = re.compile(rb"<script[^>]*>\s*/\*\*\s*\* plotly\.js v.*?</script>", re.S)


def test_the_bundle_carries_no_credential(opened: Path) -> None:
    folder = opened
    assert credentials_in(folder) == []
    for path in (p for p in folder.rglob("*") if p.is_file()):
        body = path.read_bytes()
        if path.name == RESULTS:
            conn = sqlite3.connect(path)
            body = "\n".join(conn.iterdump()).encode()
            conn.close()
        hits = _SECRET.findall(_PLOTLY_JS.sub(b"", body))
        assert not hits, (path.name, hits[:3])


@pytest.mark.parametrize("plant", [
    # A run's stored error quoting a results URL with its password.
    "UPDATE runs SET error = 'lost postgresql+psycopg://lab:hunter2@db/r'"
    " WHERE id = (SELECT MIN(id) FROM runs)",
    # A server started with --report-password shows it in SHOW GLOBAL VARIABLES.
    "UPDATE run_variables SET value = 'hunter2' WHERE name = 'report_password'"
    " AND run_id = (SELECT MIN(id) FROM runs)",
], ids=["url-in-error", "report_password"])
def test_a_planted_credential_stops_the_bundle(plant: str,
                                               tmp_path_factory: pytest.TempPathFactory,
                                               tmp_path: Path, cli: CliRun) -> None:
    db = recorded_copy("allocators", tmp_path_factory)
    conn = sqlite3.connect(db)
    assert conn.execute(plant).rowcount == 1
    conn.commit()
    conn.close()
    target = tmp_path / "leak.tar.zst"
    code, _, err = cli(["bundle", "allocators-example", "--db", str(db), "-o", str(target),
                        "--no-png"])
    assert code == 2 and "would carry a credential" in err and "results.sqlite" in err, err
    assert "hunter2" not in err and not target.exists()
    assert not list(tmp_path.iterdir())  # no half-written temporary file either


def test_unpack_regenerates_the_study_folder(packed: tuple[str, Path, Path],
                                             tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                             ) -> None:
    study, db, bundle = packed
    spec = SCRIPT.STUDIES[study]
    into = tmp_path / "folder"
    code = SCRIPT.main(["unpack", str(bundle), "--into", str(into)])
    if spec.figures:  # PNGs are what this folder keeps; the test's bundle has none
        assert code == 2 and "pack it again without --no-png" in capsys.readouterr().err
        assert not into.exists()
        return
    assert code == 0
    assert (into / "report" / "report.html").is_file()

    def rows(path: Path) -> list[str]:
        conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
        try:  # the workers table (live state of the hosts) is left out of a bundle
            return [r for r in conn.iterdump() if not r.startswith('INSERT INTO "workers"')
                    and not r.startswith("INSERT INTO workers")]
        finally:
            conn.close()

    assert rows(into / spec.database) == rows(db)


@pytest.mark.parametrize("damage", ["truncated", "corrupted"])
def test_a_damaged_bundle_names_the_file_and_the_fix(packed: tuple[str, Path, Path],
                                                     damage: str, tmp_path: Path,
                                                     cli: CliRun,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    study, _, bundle = packed
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    data = bytearray(bundle.read_bytes())
    if damage == "truncated":
        data = data[: len(data) // 2]
    else:  # a run of flipped bytes in the middle, as a bad copy would leave
        middle = len(data) // 2
        data[middle:middle + 64] = bytes(b ^ 0xFF for b in data[middle:middle + 64])
    broken = tmp_path / f"{study}.tar.zst"
    broken.write_bytes(bytes(data))
    experiment = SCRIPT.STUDIES[study].experiment
    for args in (["open", str(broken), "-o", str(tmp_path / "o")],
                 ["report", experiment, "--db", str(broken), "-o", str(tmp_path / "r")]):
        code, out, err = cli(args)
        assert code == 2, (args, out, err)
        assert str(broken) in err and "make it again with `flushbench bundle`" in err, err
        assert "Traceback" not in err
    assert not (tmp_path / "r").exists() or not any((tmp_path / "r").iterdir())
