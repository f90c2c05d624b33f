"""``bundle`` then ``open`` round-trips a real recorded experiment (the committed 2011 study):
the report rebuilt from the bundle is byte-identical, ``--db BUNDLE`` works, other experiments
stay out; tampered, unsafe, truncated and misnamed bundles are refused with one sentence."""

from __future__ import annotations

import io
import json
import re
import shutil
import sqlite3
import tarfile
from pathlib import Path

import pytest

from store.bundles import MANIFEST, RESULTS, sha256
from tests.support.cli_runner import CliRun
from tests.support.recorded import RECORDED
from tests.support.synthetic_store import SynthCell, build_store

STUDY_DB = RECORDED["stability-2011"]  # read through private copies only


@pytest.fixture(scope="module")
def two_experiments(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real study plus a second (synthetic) experiment in one database."""
    path = tmp_path_factory.mktemp("bundle") / "results.sqlite"
    shutil.copyfile(STUDY_DB, path)
    build_store(path, [SynthCell(knobs={"doublewrite": True})], name="other", repetitions=1,
                warmup=10, duration=30, n_counters=20)
    return path


@pytest.fixture(scope="module")
def bundle(two_experiments: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from analysis.bundle import make_bundle

    target = tmp_path_factory.mktemp("out") / "study.tar.zst"
    return make_bundle(two_experiments, "stability-2011", target, png=False)


def test_round_trip_keeps_the_numbers(bundle: Path, two_experiments: Path, tmp_path: Path,
                                      cli: CliRun, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    code, out, err = cli(["open", str(bundle), "-o", str(tmp_path / "opened")])
    assert code == 0, err
    assert "every file matches its manifest" in out
    folder = tmp_path / "opened" / "stability-2011"
    manifest = json.loads((folder / MANIFEST).read_text())
    assert manifest["experiment"]["name"] == "stability-2011"
    source = sqlite3.connect(f"{STUDY_DB.as_uri()}?mode=ro", uri=True)
    assert manifest["rows"]["runs"] == source.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
    source.close()
    assert manifest["environment"][0]["hostname"]
    assert {"experiment.yaml", "results.sqlite", "report/report.html"} <= set(manifest["files"])
    # Only this experiment is in the bundled database.
    conn = sqlite3.connect(folder / RESULTS)
    assert [r[0] for r in conn.execute("SELECT name FROM experiments")] == ["stability-2011"]
    conn.close()
    # The report made from the original and from the bundle are the same bytes.
    code, _, err = cli(["report", "stability-2011", "--db", str(two_experiments), "-o",
                        str(tmp_path / "r1"), "--no-png"])
    assert code == 0, err
    code, _, err = cli(["report", "stability-2011", "--db", str(bundle), "-o",
                        str(tmp_path / "r2"), "--no-png"])
    assert code == 0, err
    # Identical but for the minute the page was generated.
    def page(path: Path) -> bytes:
        return re.sub(rb"generated \d{4}-\d\d-\d\d \d\d:\d\d UTC", b"generated -",
                      path.read_bytes())

    original = page(tmp_path / "r1" / "report.html")
    assert b"generated -" in original
    assert page(tmp_path / "r2" / "report.html") == original
    assert page(folder / "report" / "report.html") == original
    code, a, _ = cli(["compare", "stability-2011", "--db", str(two_experiments)])
    code2, b, _ = cli(["compare", "stability-2011", "--db", str(bundle)])
    assert code == code2 == 0 and a == b


def _raw_tar(bundle: Path) -> bytes:
    import zstandard

    with bundle.open("rb") as raw, zstandard.ZstdDecompressor().stream_reader(raw) as zst:
        return zst.read()


def test_a_changed_file_is_refused(bundle: Path, tmp_path: Path, cli: CliRun) -> None:
    """Manifest kept from before the change: the sha256 check must catch it."""
    import zstandard

    data = _raw_tar(bundle)
    work = tmp_path / "w"
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
        tar.extractall(work, filter="data")
    folder = next(work.iterdir())
    with (folder / "experiment.yaml").open("a") as handle:
        handle.write("# edited\n")
    tampered = tmp_path / "tampered.tar.zst"
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:") as tar:
        tar.add(folder, arcname=folder.name)
    tampered.write_bytes(zstandard.ZstdCompressor().compress(buffer.getvalue()))
    assert sha256(folder / "experiment.yaml") != json.loads(
        (folder / MANIFEST).read_text())["files"]["experiment.yaml"]
    code, _, err = cli(["open", str(tampered), "-o", str(tmp_path / "o")])
    assert code == 2 and "experiment.yaml does not match its manifest" in err
    assert not (tmp_path / "o" / folder.name).exists()


def _tar_gz(path: Path, members: dict[str, bytes], *, link: str | None = None) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, body in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
        if link:
            info = tarfile.TarInfo("study/evil")
            info.type = tarfile.SYMTYPE
            info.linkname = link
            tar.addfile(info)
    return path


@pytest.mark.parametrize(("make", "message"), [
    (lambda p: _tar_gz(p / "b.tar.gz", {"study/../../escape": b"x"}), "unsafe member"),
    (lambda p: _tar_gz(p / "b.tar.gz", {"study/a": b"x"}, link="/etc/passwd"), "unsafe member"),
    (lambda p: _tar_gz(p / "b.tar.gz", {"a/x": b"1", "b/y": b"2"}), "no single top folder"),
    (lambda p: _tar_gz(p / "b.tar.gz", {"study/x": b"1"}), "no readable manifest"),
    (lambda p: (p / "b.tar.gz").write_bytes(b"\x1f\x8b truncated") and p / "b.tar.gz",
     "cannot read the bundle"),
    (lambda p: (p / "b.tar.zst").write_bytes(b"not zstd at all") and p / "b.tar.zst",
     "cannot"),
    (lambda p: (p / "b.zip").write_bytes(b"PK") and p / "b.zip", "*.tar.zst or *.tar.gz"),
], ids=["dotdot", "symlink", "two-tops", "no-manifest", "truncated-gz", "bad-zstd",
        "wrong-suffix"])
def test_hostile_bundles(tmp_path: Path, cli: CliRun, make, message: str) -> None:  # noqa: ANN001
    path = make(tmp_path)
    code, _, err = cli(["open", str(path), "-o", str(tmp_path / "o")])
    assert code == 2 and message in err and "Traceback" not in err
    assert not (tmp_path / "escape").exists()


def test_bundle_refuses_an_existing_file_and_a_server_database(tmp_path: Path, cli: CliRun,
                                                               two_experiments: Path) -> None:
    existing = tmp_path / "s.tar.zst"
    existing.write_bytes(b"keep me")
    code, _, err = cli(["bundle", "stability-2011", "--db", str(two_experiments), "-o",
                        str(existing)])
    assert code == 2 and "exists already" in err and existing.read_bytes() == b"keep me"
    code, _, err = cli(["bundle", "x", "--db", "postgresql+psycopg://u:pw@h/db", "-o",
                        str(tmp_path / "n.tar.zst")])
    assert code == 2 and "SQLite" in err and "pw" not in err
