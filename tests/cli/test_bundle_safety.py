"""Study bundles from someone else: hostile archives against `flushbench open` and `--db BUNDLE`.

One table, one row per hostile case: each row builds its archive itself (tarfile, zstandard or
gzip) in a fresh folder beside the user's own files, runs the real entry point in this
process, and lists that folder before and after. A refusal is one ``error:`` line naming the
bundle as the user named it (never its cache copy), exit 2, no traceback, and the folder
exactly as it was; an opening creates files only inside the bundle's new folder (or, with
``--force``, only the bundle's own files inside the folder named) and changes or deletes
nothing. A verb that writes refuses a bundle before it unpacks anything.
"""

from __future__ import annotations

import hashlib
import io
import json
import sqlite3
import tarfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from store import bundle_archive
from store.bundles import open_bundle
from store.migrate import head_revision
from tests.cli.conftest import CliRun
from tests.support.patching import DELETE, merge
from tests.support.recorded import ROOT

FIXTURES = ROOT / "tests" / "fixtures" / "results-db"
#: A small real results database at the current schema, and one a revision older.
_REVISIONS = sorted(FIXTURES.glob("rev-*.sqlite"))
HEAD_DB = FIXTURES / f"rev-{head_revision()}.sqlite"
OLD_DB = _REVISIONS[_REVISIONS.index(HEAD_DB) - 1]
GiB = 1024**3
HOST = {"hostname": "lab1", "kernel": "6.1.0", "cpu_model": "Xeon", "cpu_count": 8,
        "mem_total_bytes": 32 * GiB, "datadir_device": "nvme0n1", "datadir_fstype": "ext4",
        "server_flavor": "mariadb", "server_version": "10.11.6", "dataset_key": "tpcc-w10",
        "driver": "tpcc"}


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _figures(db: Path) -> tuple[str, dict[str, int]]:
    conn = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)
    try:
        names = [r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'")]
        rows = {n: conn.execute(f'SELECT COUNT(*) FROM "{n}"').fetchone()[0] for n in names}
        return conn.execute("SELECT version_num FROM alembic_version").fetchone()[0], rows
    finally:
        conn.close()


def study_files(db: Path = HEAD_DB) -> dict[str, bytes]:
    """The files of a small bundle (the manifest aside)."""
    return {"results.sqlite": db.read_bytes(), "experiment.yaml": b"name: study-short\n",
            "report/report.html": b"<html>report</html>\n"}


def manifest(files: dict[str, bytes], db: Path = HEAD_DB,
             change: dict[str, Any] | None = None) -> bytes:
    """The manifest `flushbench bundle` would write for ``files``, with ``change`` merged in."""
    revision, rows = _figures(db)
    base = {"bundle_format": 1,
            "experiment": {"name": "study-short", "measurement_hash": "0" * 64},
            "made_at": "2026-11-26T05:15:00+00:00", "flushbench_version": "0.1.0",
            "made_with": {"python": "3.11.7", "sqlite": "3.40.1", "platform": "Linux"},
            "schema_revision": revision, "reference": None, "rows": rows,
            "environment": [HOST], "files": {name: _sha(body) for name, body in files.items()}}
    return json.dumps(merge(base, change or {})).encode()


Entry = tarfile.TarInfo | tuple[str, bytes]


def _info(entry: Entry) -> tuple[tarfile.TarInfo, io.BytesIO | None]:
    if isinstance(entry, tarfile.TarInfo):
        return entry, None
    name, body = entry
    info = tarfile.TarInfo(name)
    info.size = len(body)
    return info, io.BytesIO(body)


def write_tar(path: Path, entries: Iterable[Entry]) -> Path:
    """A tar stream of ``entries`` compressed as ``path``'s suffix says (zst or gz)."""
    with path.open("wb") as raw:
        if path.name.endswith(".tar.zst"):
            import zstandard

            with zstandard.ZstdCompressor(level=3).stream_writer(raw, closefd=False) as zst, \
                    tarfile.open(fileobj=zst, mode="w|", format=tarfile.PAX_FORMAT) as tar:
                for entry in entries:
                    tar.addfile(*_info(entry))
        else:
            with tarfile.open(fileobj=raw, mode="w|gz", format=tarfile.PAX_FORMAT) as tar:
                for entry in entries:
                    tar.addfile(*_info(entry))
    return path


def bundle(path: Path, *, top: str = "study", files: dict[str, bytes] | None = None,
           change: dict[str, Any] | None = None, db: Path = HEAD_DB,
           extra: Iterable[Entry] = ()) -> Path:
    """A bundle as `flushbench bundle` makes it (manifest first), optionally changed."""
    files = study_files(db) if files is None else files
    entries: list[Entry] = [(f"{top}/MANIFEST.json", manifest(files, db, change))]
    entries += [(f"{top}/{name}", body) for name, body in files.items()]
    return write_tar(path, [*entries, *extra])


def _special(name: str, kind: bytes, linkname: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = linkname
    return info


class _Zeros(io.RawIOBase):
    """``size`` zero bytes, read in chunks (a bomb's member, never held in memory)."""

    def __init__(self, size: int) -> None:
        self.left = size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        n = min(len(buffer), self.left)
        buffer[:n] = bytes(n)
        self.left -= n
        return n


def bomb(path: Path, size: int = 3 * GiB) -> Path:
    """A ~96 KiB .tar.zst whose one member expands to ``size`` zero bytes."""
    info = tarfile.TarInfo("study/results.sqlite")
    info.size = size
    entry = _info(("study/MANIFEST.json", manifest(study_files())))
    import zstandard

    with path.open("wb") as raw, \
            zstandard.ZstdCompressor(level=1).stream_writer(raw, closefd=False) as zst, \
            tarfile.open(fileobj=zst, mode="w|") as tar:
        tar.addfile(*entry)
        tar.addfile(info, io.BufferedReader(_Zeros(size), 1 << 20))
    assert path.stat().st_size < 200 * 1024
    return path


# ------------------------------------------------------------------- the rows' builders


def _open(path: Path, *more: str) -> list[str]:
    return ["open", str(path), *more]


def dot_slash_members(case: Path) -> list[str]:
    """Members named ``./x`` (top folder ``.``): would land in the folder it is opened in."""
    (case / "results.sqlite").write_bytes(b"the user's own results")
    files = study_files()
    entries = [("./MANIFEST.json", manifest(files))]
    entries += [(f"./{name}", body) for name, body in files.items()]
    return _open(write_tar(case / "study.tar.zst", entries))


def top_folder_is_a_folder_beside_it(case: Path) -> list[str]:
    """Top folder ``docs`` holding ``docs/notes.txt``, as the user's own folder does."""
    (case / "docs").mkdir()
    (case / "docs" / "notes.txt").write_text("the user's notes\n")
    files = {**study_files(), "notes.txt": b"overwritten\n"}
    return _open(bundle(case / "study.tar.zst", top="docs", files=files))


def experiments_folder_holding_the_bundle(case: Path) -> list[str]:
    """Top folder ``experiments`` (the user's, which holds the bundle too), and a file that
    fails its manifest: the old cleanup removed the whole folder, bundle included."""
    (case / "experiments").mkdir()
    (case / "experiments" / "mine.yaml").write_text("version: 1\n")
    path = bundle(case / "experiments" / "study.tar.zst", top="experiments",
                  change={"files": {"experiment.yaml": "0" * 64}})
    return _open(path, "-o", str(case))


def experiments_folder_forced_with_a_failure(case: Path) -> list[str]:
    """Same, with --force and a failure after the files are written (row counts): the
    cleanup removes only the files this opening made."""
    (case / "experiments").mkdir()
    (case / "experiments" / "mine.yaml").write_text("version: 1\n")
    (case / "experiments" / "report").mkdir()  # there before: stays
    path = bundle(case / "experiments" / "study.tar.zst", top="experiments",
                  change={"rows": {"runs": 9}})
    return _open(path, "-o", str(case), "--force")


def _opened_before(case: Path) -> Path:
    """The study opened here before, plus the user's notes in its folder."""
    good = bundle(case / "study.tar.zst")
    open_bundle(good, case)
    (case / "study" / "notes.txt").write_text("my notes on the study\n")
    return good


def corrupt_download_where_opened_before(case: Path) -> list[str]:
    """A new copy whose database came through corrupted (it decompresses; its sha256 differs)."""
    path = _opened_before(case)
    files = study_files()
    damaged = {**files, "results.sqlite": files["results.sqlite"][:-1] + b"\xff"}
    entries = [("study/MANIFEST.json", manifest(files))]
    entries += [(f"study/{name}", body) for name, body in damaged.items()]
    return _open(write_tar(path, entries))


def truncated_download_where_opened_before(case: Path) -> list[str]:
    path = _opened_before(case)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return _open(path)


def same_bundle_opened_again_with_force(case: Path) -> list[str]:
    return _open(_opened_before(case), "--force")


def force_into_a_folder_of_other_files(case: Path) -> list[str]:
    (case / "study").mkdir()
    (case / "study" / "notes.txt").write_text("my notes\n")
    return _open(bundle(case / "study.tar.zst"), "--force")


def new_nested_out_folder_then_failure(case: Path) -> list[str]:
    """`-o a/b/c` made for the opening, then the row counts fail: a, b and c go again."""
    path = bundle(case / "study.tar.zst", change={"schema_revision": "0005"})
    return _open(path, "-o", str(case / "a" / "b" / "c"))


def decompression_bomb(case: Path) -> list[str]:
    return _open(bomb(case / "study.tar.zst"))


def pax_header_bomb(case: Path) -> list[str]:
    """A member whose pax header holds 64 MiB (tarfile reads a header whole into memory)."""
    info = tarfile.TarInfo("study/results.sqlite")
    info.pax_headers = {"comment": "x" * (64 * 1024**2)}
    return _open(write_tar(case / "study.tar.gz", [info]))


def too_many_members(case: Path) -> list[str]:
    entries = [(f"study/f{i}", b"") for i in range(bundle_archive.MAX_MEMBERS + 1)]
    return _open(write_tar(case / "study.tar.zst", entries))


def members_over_the_total(case: Path) -> list[str]:
    """Members each under the member cap adding up over the total (caps lowered below)."""
    entries = [(f"study/part{i}", bytes(600 * 1024)) for i in range(3)]
    return _open(write_tar(case / "study.tar.zst", entries))


def unlisted_file(case: Path) -> list[str]:
    return _open(bundle(case / "study.tar.zst", extra=[("study/run-me.sh", b"rm -rf ~\n")]))


def manifest_change(change: dict[str, Any]) -> Callable[[Path], list[str]]:
    def build(case: Path) -> list[str]:
        return _open(bundle(case / "study.tar.zst", change=change))
    return build


def manifest_not_json(case: Path) -> list[str]:
    files = study_files()
    entries = [("study/MANIFEST.json", b"{not json"),
               *((f"study/{n}", body) for n, body in files.items())]
    return _open(write_tar(case / "study.tar.zst", entries))


def with_member(entry: Entry) -> Callable[[Path], list[str]]:
    def build(case: Path) -> list[str]:
        return _open(bundle(case / "study.tar.zst", extra=[entry]))
    return build


def read_with_member(entry: Entry) -> Callable[[Path], list[str]]:
    """``status --db BUNDLE`` on a bundle holding one more member."""
    def build(case: Path) -> list[str]:
        return ["status", "--db", str(bundle(case / "study.tar.zst", extra=[entry]))]
    return build


#: A member name of bytes that are not UTF-8 (tarfile writes a surrogate back as its byte).
NOT_UTF8 = ("study/\udcff\udcfe.txt", b"x")


def out_is_a_file(case: Path) -> list[str]:
    (case / "here").write_text("a file\n")
    return _open(bundle(case / "study.tar.zst"), "-o", str(case / "here"))


def out_under_proc(case: Path) -> list[str]:
    return _open(bundle(case / "study.tar.zst"), "-o", "/proc/self")


def writes_to(*verb: str) -> Callable[[Path], list[str]]:
    """A verb that writes, pointed at a valid bundle."""
    def build(case: Path) -> list[str]:
        path = bundle(case / "study.tar.zst")
        return [*verb, "--db", str(path)]
    return build


def reads(db: Path, *verb: str, damage: bool = False) -> Callable[[Path], list[str]]:
    """A read verb on a bundle of ``db`` (optionally cut short)."""
    def build(case: Path) -> list[str]:
        path = bundle(case / "study.tar.zst", db=db)
        if damage:
            path.write_bytes(path.read_bytes()[:-4096])
        return [*verb, "--db", str(path)]
    return build


def valid_bundle(case: Path) -> list[str]:
    (case / "results.sqlite").write_bytes(b"the user's own results")
    return _open(bundle(case / "study.tar.zst"))


# ----------------------------------------------------------------------------- the table


@dataclass(frozen=True)
class Case:
    """One hostile bundle: how it is made and used, and what must be said."""

    id: str
    build: Callable[[Path], list[str]]
    expect: list[str] = field(default_factory=list)
    #: Success: the folder (relative to the case folder) the bundle's files go into.
    opened: str | None = None
    #: Caps of store.bundle_archive lowered for the case.
    limits: dict[str, int] = field(default_factory=dict)
    #: A read verb may unpack the bundle into the cache; nothing else may.
    cache_used: bool = False


EXPERIMENT = str(ROOT / "experiments" / "quickstart.yaml")
READ_ONLY = ["a study bundle is read-only", "flushbench open"]
CASES = [
    # Where the files go.
    Case("dot-slash-members-never-land-beside-the-bundle", dot_slash_members,
         ["unsafe member", "'./MANIFEST.json'"]),
    Case("top-folder-that-exists-beside-the-bundle-is-refused", top_folder_is_a_folder_beside_it,
         ["docs exists already", "-o FOLDER"]),
    Case("experiments-folder-is-not-merged-nor-removed", experiments_folder_holding_the_bundle,
         ["experiment.yaml does not match its manifest"]),
    Case("forced-opening-that-fails-removes-only-its-own-files",
         experiments_folder_forced_with_a_failure, ["counts 9 rows in runs", "holds 8"]),
    Case("corrupt-download-keeps-the-earlier-folder-and-notes",
         corrupt_download_where_opened_before, ["results.sqlite does not match its manifest"]),
    Case("truncated-download-keeps-the-earlier-folder-and-notes",
         truncated_download_where_opened_before, ["make it again with `flushbench bundle`"]),
    Case("reopening-with-force-never-overwrites", same_bundle_opened_again_with_force,
         ["exists already: opening the bundle would overwrite it"]),
    Case("force-adds-the-bundle-to-a-folder-of-other-files", force_into_a_folder_of_other_files,
         opened="study"),
    Case("made-out-folders-are-removed-after-a-failure", new_nested_out_folder_then_failure,
         ["manifest says schema revision 0005", f"at {head_revision()}"]),
    Case("out-folder-that-is-a-file-is-refused", out_is_a_file, ["is a file, not a folder"]),
    Case("out-folder-under-proc-is-refused-up-front", out_under_proc,
         ["cannot write the folder to open the bundle in under /proc"]),
    Case("valid-bundle-opens-into-a-new-folder-only", valid_bundle, opened="study"),
    # Decompression.
    Case("decompression-bomb-is-one-sentence", decompression_bomb,
         ["3,221,225,472 bytes, over the 1 GiB a member may hold"]),
    Case("pax-header-bomb-is-refused-as-it-is-read", pax_header_bomb,
         ["headers of more than 1 MiB"]),
    Case("member-count-is-capped", too_many_members, ["more than 10,000 members"]),
    Case("total-size-is-capped", members_over_the_total, ["hold over"],
         limits={"MAX_TOTAL_BYTES": 1024**2}),
    # Members.
    Case("file-the-manifest-does-not-list-is-refused", unlisted_file,
         ["does not list: 'run-me.sh'"]),
    Case("symlink-member-is-refused", with_member(_special("study/x", tarfile.SYMTYPE, "/etc")),
         ["unsafe member", "a link, device or FIFO"]),
    Case("hardlink-member-is-refused",
         with_member(_special("study/x", tarfile.LNKTYPE, "study/results.sqlite")),
         ["unsafe member"]),
    Case("fifo-member-is-refused", with_member(_special("study/x", tarfile.FIFOTYPE)),
         ["unsafe member"]),
    Case("member-name-not-utf8-is-refused", with_member(NOT_UTF8),
         ["a member whose name is not UTF-8: b'study/\\xff\\xfe.txt'"]),
    Case("member-name-not-utf8-read-by-a-verb-is-refused", read_with_member(NOT_UTF8),
         ["a member whose name is not UTF-8"], cache_used=True),
    Case("member-twice-is-refused", with_member(("study/experiment.yaml", b"second\n")),
         ["'experiment.yaml' twice"]),
    Case("file-where-a-folder-is-is-refused", with_member(("study/report", b"x")),
         ["'report' twice, or as a file and a folder"]),
    # The manifest.
    Case("manifest-that-is-not-json", manifest_not_json, ["MANIFEST.json is not valid JSON"]),
    Case("manifest-files-as-a-list", manifest_change({"files": ["results.sqlite"]}),
         ["invalid at files: Input should be an object"]),
    Case("manifest-without-experiment", manifest_change({"experiment": DELETE}),
         ["invalid at experiment: required key is missing"]),
    Case("manifest-without-made-at", manifest_change({"made_at": DELETE}),
         ["invalid at made_at: required key is missing"]),
    Case("manifest-host-without-its-keys",
         manifest_change({"environment": [{"hostname": "lab1"}]}),
         ["invalid at environment[0].kernel: required key is missing"]),
    Case("manifest-row-count-checked-against-the-database",
         manifest_change({"rows": {"runs": 7}}), ["counts 7 rows in runs", "holds 8"]),
    Case("manifest-table-the-database-lacks",
         manifest_change({"rows": {"secrets": 1}}), ["a table secrets its database lacks"]),
    Case("manifest-schema-revision-checked-against-the-database",
         manifest_change({"schema_revision": "0005"}),
         ["schema revision 0005", f"at {head_revision()}"]),
    Case("manifest-version-that-is-no-version",
         manifest_change({"flushbench_version": "1.0\x1b]0;pwned\x07"}),
         ["invalid at flushbench_version"]),
    Case("manifest-absolute-path-is-never-opened",
         manifest_change({"files": {"/proc/kcore": "0" * 64}}),
         ["files['/proc/kcore']", "not a relative path inside the bundle"]),
    Case("manifest-dotdot-path-is-never-opened",
         manifest_change({"files": {"../../etc/hostname": "0" * 64}}),
         ["files['../../etc/hostname']", "not a relative path inside the bundle"]),
    Case("manifest-reference-not-among-the-files",
         manifest_change({"reference": "reference.yaml"}),
         ["invalid at reference", "not among the files"]),
    # A bundle is read-only.
    Case("queue-add-refuses-a-bundle", writes_to("queue", "add", EXPERIMENT), READ_ONLY),
    Case("run-refuses-a-bundle", writes_to("run", EXPERIMENT), READ_ONLY),
    Case("worker-refuses-a-bundle", writes_to("worker"), READ_ONLY),
    Case("db-upgrade-refuses-a-bundle", writes_to("db", "upgrade"), READ_ONLY),
    Case("queue-cancel-refuses-a-bundle", writes_to("queue", "cancel", "study-short"), READ_ONLY),
    Case("queue-unpin-refuses-a-bundle", writes_to("queue", "unpin", "study-short"), READ_ONLY),
    Case("queue-stop-refuses-a-bundle", writes_to("queue", "stop"), READ_ONLY),
    # Errors name the bundle, not its cache copy.
    Case("old-schema-bundle-is-named-with-the-fix", reads(OLD_DB, "status"),
         [f"schema revision {OLD_DB.stem.split('-')[1][:4]}", "flushbench open", "db upgrade"],
         cache_used=True),
    Case("damaged-bundle-read-by-a-verb-is-named", reads(HEAD_DB, "status", damage=True),
         ["make it again with `flushbench bundle`"], cache_used=True),
    Case("status-reads-a-bundle-without-writing", reads(HEAD_DB, "status"), opened="",
         cache_used=True),
]


def _listing(folder: Path) -> dict[str, tuple[str, str]]:
    """Every path under ``folder``: its kind and content (a file's sha256, a link's target)."""
    out: dict[str, tuple[str, str]] = {}
    for path in sorted(folder.rglob("*")):
        name = str(path.relative_to(folder))
        if path.is_symlink():
            out[name] = ("link", str(path.readlink()))
        elif path.is_dir():
            out[name] = ("folder", "")
        else:
            out[name] = ("file", _sha(path.read_bytes()))
    return out


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_bundle(case: Case, tmp_path: Path, cli: CliRun,
                        monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "case"
    folder.mkdir()
    cache = tmp_path / "cache"
    monkeypatch.setenv("FLUSHBENCH_CACHE_DIR", str(cache))
    monkeypatch.delenv("FLUSHBENCH_DB", raising=False)
    monkeypatch.chdir(folder)
    for name, value in case.limits.items():
        monkeypatch.setattr(bundle_archive, name, value)
    args = case.build(folder)
    bundle_path = args[args.index("--db") + 1] if "--db" in args else args[1]
    before = _listing(folder)
    code, out, err = cli(args)
    after = _listing(folder)
    assert "Traceback" not in err and "MemoryError" not in err and "internal error" not in err
    assert str(cache) not in err + out, "a message names the cache copy, not the bundle"
    if not case.cache_used:
        assert not cache.exists() or not any(cache.rglob("*")), "something was unpacked"
    if case.opened is None:
        assert code == 2, (out, err)
        assert err.startswith(f"error: {bundle_path}: ") and err.count("error:") == 1, err
        for fragment in case.expect:
            assert fragment in err, (fragment, err)
        assert after == before, "the folder around the bundle changed"
        return
    assert code == 0, err
    assert {name: after.get(name) for name in before} == before, "a file was changed or deleted"
    created = set(after) - set(before)
    inside = f"{case.opened}/" if case.opened else None
    assert all(inside and name.startswith(inside) or name == case.opened for name in created), \
        sorted(created)


def test_opened_folder_holds_exactly_the_bundle(tmp_path: Path, cli: CliRun) -> None:
    """The files written are the bundle's, byte for byte, and `open` says how to use them."""
    files = study_files()
    path = bundle(tmp_path / "study.tar.zst", files=files)
    code, out, err = cli(["open", str(path), "-o", str(tmp_path / "o")])
    assert code == 0, err
    folder = tmp_path / "o" / "study"
    written = {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*")
               if p.is_file()}
    assert written == {**files, "MANIFEST.json": manifest(files)}
    assert "every file matches its manifest" in out and "ran on lab1: mariadb 10.11.6" in out
    assert f"--db {folder / 'results.sqlite'}" in out


def test_old_schema_bundle_opens_and_says_to_upgrade_the_copy(tmp_path: Path,
                                                              cli: CliRun) -> None:
    path = bundle(tmp_path / "old.tar.zst", db=OLD_DB)
    code, out, err = cli(["open", str(path)])
    assert code == 0, err
    copy = tmp_path / "study" / "results.sqlite"
    assert f"run `flushbench db upgrade --db {copy}` first" in out


def test_doctor_reads_a_bundle_as_a_database(tmp_path: Path, cli: CliRun) -> None:
    """doctor only reads: a bundle named by --db is a results database it can describe."""
    path = bundle(tmp_path / "study.tar.zst")
    code, out, err = cli(["doctor", "--db", str(path)])
    # A table where the terminal holds one, else one block of `heading: value` lines a check.
    if "│ results database" in out:
        row = next(line for line in out.splitlines() if line.startswith("│ results database"))
        assert "│ ok " in row
    else:
        block = out.split("- check: results database", 1)[1].split("\n- check:", 1)[0]
        assert "status: ok" in block, out
    assert "read-only" in out and "FAIL" not in out.split("results database")[1]
