"""No password reaches any output, whatever it holds: every hostile spelling, every writer.

Each password of :mod:`tests.support.hostile_passwords` (a space, quotes, ``?``, ``#``, an
unencoded ``@``, non-ASCII, a percent-escape, ``;``, long ones …) goes through each place
flushbench writes text: the terminal of the verbs that name the results database (a real
PostgreSQL URL pointing at a port where nothing listens, so the connection failure is what is
printed), the run log and the crash log, the rows a run stores (its error, its events, its
server variables), an experiment file that would carry it (refused at validation, nothing
stored), the report's HTML and a study bundle. Neither end of the password may appear in any
of them: on the terminal, or in the raw bytes of every file and of the SQLite database.

Everything runs in this process through the real entry point (``main()``, its error
boundary, its console); nothing but localhost is contacted. A new results database and the
small experiment holding every password are each written once and copied into every case that
starts from them.
"""

from __future__ import annotations

import io
import json
import shutil
import sqlite3
import sys
import tarfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

from core.redaction import MASK, forget_secrets
from store.bundles import MANIFEST, RESULTS
from tests.support.cli_runner import CliRun
from tests.support.hostile_passwords import LEFT, PASSWORD_IDS, PASSWORDS, RIGHT, Password

#: A PostgreSQL server address where nothing listens: every verb fails to connect.
NOWHERE = "127.0.0.1:1"
EXPERIMENT = "creds"


def _userinfo_url(pw: Password) -> str:
    return f"postgresql+psycopg://bench:{pw.text}@{NOWHERE}/flushbench"


def _query_url(pw: Password) -> str:
    return f"postgresql+psycopg://bench@{NOWHERE}/flushbench?sslmode=disable&password={pw.text}"


@pytest.fixture(autouse=True)
def _nothing_remembered() -> Iterator[None]:
    """Each case starts with no remembered password: only what the case itself does counts."""
    forget_secrets()
    yield
    forget_secrets()


def _leaks(pw: Password, folder: Path) -> list[str]:
    """``file: fragment`` for every file under ``folder`` whose raw bytes hold the password."""
    return [f"{path.relative_to(folder)}: {fragment}"
            for path in sorted(p for p in folder.rglob("*") if p.is_file())
            for fragment in pw.leaked_in(path.read_bytes())]


def _where(text: str) -> str:
    """The text around the first leaked end, for a failure message."""
    at = max(text.find(LEFT), text.find(RIGHT))
    return text[max(0, at - 120):at + 120]


def _written_once(folder: Path, write: Callable[[Path], None]) -> Path:
    """``folder``, a new case folder, after ``write(folder / "r.sqlite")`` ran in it as in a
    case (current directory, work dir and environment as the case_dir fixture sets them).

    What several cases would write alike is written once and copied into each case folder
    (:func:`_copied_into`): each starts from the very files a write of its own leaves.
    """
    folder.mkdir()
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        patch.setenv("FLUSHBENCH_WORK", str(folder / "work"))
        patch.delenv("FLUSHBENCH_DB", raising=False)
        patch.setenv("COLUMNS", "200")
        forget_secrets()
        write(folder / "r.sqlite")
        forget_secrets()  # nothing the write remembered helps a case mask
    return folder


def _copied_into(written: Path, case_dir: Path) -> Path:
    """The files of a :func:`_written_once` folder copied into ``case_dir``; the path of the
    results database among them."""
    shutil.copytree(written, case_dir, dirs_exist_ok=True)
    return case_dir / "r.sqlite"


@pytest.fixture(scope="module")
def new_results_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A case folder holding ``r.sqlite`` as ``ResultsDB`` creates it on first use (created
    and migrated to head: ~0.1 s of migrations a case), for the logs' and the rows' cases."""
    from store.db import ResultsDB

    return _written_once(tmp_path_factory.mktemp("new-results") / "case",
                         lambda path: ResultsDB(path).dispose())


# --- the terminal -----------------------------------------------------------------------------

def _verbs(url: str, out: Path) -> list[list[str]]:
    """The verbs that open the results database and name it when they cannot."""
    return [["status", "--db", url], ["show", "1", "--db", url],
            ["compare", EXPERIMENT, "--db", url], ["compare", f"{EXPERIMENT}@{url}"],
            ["compare", f"{EXPERIMENT}@{url}", f"{EXPERIMENT}@{out / 'other.sqlite'}"],
            ["report", f"{EXPERIMENT}@{url}", f"{EXPERIMENT}@{out / 'other.sqlite'}",
             "-o", str(out / "cross"), "--no-png"],
            ["queue", "list", "--db", url], ["db", "upgrade", "--db", url],
            ["export", EXPERIMENT, "-o", str(out / "e.csv"), "--db", url],
            ["report", EXPERIMENT, "-o", str(out / "report"), "--no-png", "--db", url],
            ["bundle", EXPERIMENT, "-o", str(out / "b.tar.gz"), "--db", url],
            ["worker", "--idle-timeout", "0", "--log-file", str(out / "w.log"), "--db", url]]


@pytest.mark.parametrize("pw", PASSWORDS, ids=PASSWORD_IDS)
def test_the_terminal_never_shows_the_password(pw: Password, case_dir: Path, cli: CliRun,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    runs = [(args, None) for url in (_userinfo_url(pw), _query_url(pw))
            for args in _verbs(url, case_dir)]
    runs += [(["show", "1"], _userinfo_url(pw)), (["queue", "list"], _query_url(pw))]
    for args, env_db in runs:
        if env_db is None:
            monkeypatch.delenv("FLUSHBENCH_DB", raising=False)
        else:
            monkeypatch.setenv("FLUSHBENCH_DB", env_db)
        forget_secrets()  # each command starts a fresh process in real life
        code, out, err = cli(args)
        both = out + err
        assert code == 2, (args[0], both)
        assert err.startswith("error: ") and "internal error" not in err, (args[0], err)
        assert not pw.leaked_in(both), (args[0], _where(both))
        assert "127.0.0.1" in err, (args[0], err)  # where the problem is stays readable
    assert not _leaks(pw, case_dir)


@pytest.mark.mysql  # queue add runs the preflight (the server binary parses the options) first
@pytest.mark.parametrize("pw", PASSWORDS, ids=PASSWORD_IDS)
def test_queue_add_with_an_unreachable_database_never_shows_the_password(
        pw: Password, case_dir: Path, cli: CliRun) -> None:
    from core.paths import tpcc_binary

    if not tpcc_binary().is_file():  # the preflight checks the driver's binary too
        pytest.skip("tpcc/bin/tpcc is not built (make setup)")
    path = case_dir / "x.yaml"
    path.write_text(yaml.safe_dump(_experiment()))
    code, out, err = cli(["queue", "add", str(path), "--db", _userinfo_url(pw)])
    assert code == 2 and err.startswith("error: ") and "127.0.0.1" in err, err
    assert "internal error" not in err
    assert not pw.leaked_in(out + err), _where(out + err)
    assert not _leaks(pw, case_dir)


# --- an experiment file that would carry it ---------------------------------------------------

def _experiment(**extra: object) -> dict[str, object]:
    return {"version": 1, "name": EXPERIMENT,
            "dataset": {"workload": "tpcc", "warehouses": 1},
            "workload": {"driver": "tpcc", "duration": "6s", "warmup": "2s",
                         "report_interval": "2s"},
            "sampling": {"interval": "2s"}, **extra}


def _carriers(pw: Password) -> list[tuple[dict[str, object], str, str]]:
    """(experiment keys, the key path refused, what the message says)."""
    rows = {"include": [{"doublewrite": True, "reference": {"name": "base", "notpm": 1}},
                        {"doublewrite": False, "reference": {"name": "off", "notpm": 2}}]}
    return [
        ({**rows, "reference": {"source": "s", "url": f"https://u:{pw.text}@example.com/p"}},
         "reference.url", "a reference URL is published in reports"),
        ({**rows, "reference": {"source": "s",
                                "url": f"https://example.com/p?a=1&password={pw.text}"}},
         "reference.url", "a `password=` parameter"),
        ({"description": f"results in mysql://root:{pw.text}@db.example/x"}, "description",
         "remove the credentials"),
        ({**rows, "reference": {"source": f"see ({_userinfo_url(pw)})"}}, "reference.source",
         "remove the credentials"),
    ]


@pytest.mark.parametrize("pw", PASSWORDS, ids=PASSWORD_IDS)
def test_an_experiment_carrying_the_password_is_refused_and_nothing_stored(
        pw: Password, case_dir: Path, cli: CliRun) -> None:
    db = case_dir / "r.sqlite"
    for keys, where, says in _carriers(pw):
        path = case_dir / "x.yaml"
        path.write_text(yaml.safe_dump(_experiment(**keys), allow_unicode=True))
        for args in (["validate", str(path)], ["queue", "add", str(path), "--db", str(db)]):
            forget_secrets()
            code, out, err = cli(args)
            assert code == 2, (args[0], err)
            assert err.startswith(f"error: {path}: {where}: ") and says in err, err
            assert err.count("\n") == 1, err  # one sentence: file, key path, fix
            assert not pw.leaked_in(out + err), _where(out + err)
    assert not db.exists()  # refused before the results database is touched
    leaks = [leak for leak in _leaks(pw, case_dir) if not leak.startswith("x.yaml")]
    assert not leaks, leaks


# --- logs -------------------------------------------------------------------------------------

def _messages(pw: Password) -> list[str]:
    """Messages quoting the password the ways a driver, a client or flushbench itself might."""
    return [f"error: {_userinfo_url(pw)}: cannot use the results database — check the host",
            f"cannot connect to '{_query_url(pw)}' (refused)",
            f'worker on "mysql://root:{pw.text}@db.example:3306/x" stopped',
            f"argv: mysql --user=root --password={pw.text} -h db",
            f"tpcc_start -h db -u root -p {pw.text} -w 10",
            f"MYSQL_PWD={pw.text} mysql -uroot"]


@pytest.mark.parametrize("pw", PASSWORDS, ids=PASSWORD_IDS)
def test_the_run_log_and_the_crash_log_never_hold_the_password(
        pw: Password, case_dir: Path, monkeypatch: pytest.MonkeyPatch,
        new_results_db: Path) -> None:
    from flushbench import cli as cli_module
    from flushbench.cli.logs import LogReporter
    from store.db import ResultsDB

    db = ResultsDB(_copied_into(new_results_db, case_dir))
    stream = io.StringIO()
    with LogReporter(db, case_dir / "logs" / "worker.log", stream=stream) as reporter:
        for message in _messages(pw):
            reporter.note(message)
    db.dispose()
    assert not pw.leaked_in(stream.getvalue()), _where(stream.getvalue())
    assert stream.getvalue().count(MASK) >= len(_messages(pw))

    monkeypatch.setattr(sys, "argv", ["flushbench", "status", "--db", _userinfo_url(pw),
                                      f"--db={_query_url(pw)}"])
    try:
        raise RuntimeError("boom: " + "\n".join(_messages(pw)))
    except RuntimeError as exc:
        crash_log = Path(cli_module._crash_log(exc))
    text = crash_log.read_text()
    assert "boom" in text and "status --db" in text and not pw.leaked_in(text), _where(text)
    assert crash_log.is_relative_to(case_dir / "work" / "logs")
    assert not _leaks(pw, case_dir)


# --- the rows a run stores --------------------------------------------------------------------

@pytest.mark.parametrize("pw", PASSWORDS, ids=PASSWORD_IDS)
def test_the_stored_rows_never_hold_the_password(pw: Password, case_dir: Path,
                                                 new_results_db: Path) -> None:
    from store import ledger
    from store.db import ResultsDB
    from store.ledger.recorder import RunRecorder
    from store.models import Run, RunEvent
    from tests.support.queueing import one_running_run

    db = ResultsDB(_copied_into(new_results_db, case_dir))
    run_id = one_running_run(db, EXPERIMENT)
    recorder = RunRecorder(db, run_id)
    for message in _messages(pw):
        recorder.event("error", "driver", message, evidence=f"log tail:\n{message}\n")
    recorder.variables({"init_connect": f"SET @u='{_userinfo_url(pw)}'",
                        "report_password": pw.text, "innodb_io_capacity": "200"})
    assert recorder.flush()
    recorder.close()
    ledger.finish(db, run_id, "failed", "\n".join(_messages(pw)))
    with db.session() as s:
        stored = [s.get(Run, run_id).error or "",
                  *(e.message for e in s.query(RunEvent).filter_by(run_id=run_id))]
    db.dispose()
    assert len(stored) == 1 + len(_messages(pw)) and "cannot use the results" in stored[0]
    assert not _leaks(pw, case_dir)  # the raw database file, its WAL and its -shm


# --- the report and the bundle ----------------------------------------------------------------

def _store_with_every_password(path: Path) -> None:
    """A small finished experiment whose rows went through the real writers with every
    password: a failed run's error and events (masked as they are written)."""
    from store import ledger
    from store.db import ResultsDB
    from store.ledger.recorder import RunRecorder
    from store.models import Run
    from tests.support.synthetic_store import SynthCell, build_store

    cells = [SynthCell(knobs={"doublewrite": True}, notpm=38000),
             SynthCell(knobs={"doublewrite": False}, notpm=60000, failed_repetitions=(2,))]
    db = ResultsDB(path)
    build_store(db, cells, name=EXPERIMENT, repetitions=2, duration=120, warmup=20,
                n_counters=40)
    with db.session() as s:
        failed = s.query(Run).filter_by(status="failed").one().id
    recorder = RunRecorder(db, failed)
    for pw in PASSWORDS:
        for message in _messages(pw):
            recorder.event("error", "driver", message, evidence=message)
    assert recorder.flush()
    recorder.close()
    ledger.finish(db, failed, "failed", "\n".join(m for pw in PASSWORDS for m in _messages(pw)))
    db.dispose()


def _plant_in_stored_spec(path: Path) -> None:
    """What a database queued before URLs with credentials were refused may hold: every
    password in the experiment's description and reference (source, link)."""
    by_id = {pw.id: pw for pw in PASSWORDS}
    conn = sqlite3.connect(path)
    (spec,) = conn.execute("SELECT spec FROM experiments").fetchone()
    spec = json.loads(spec)
    spec["include"] = [{"doublewrite": True, "reference": {"name": "base", "notpm": 38000}},
                       {"doublewrite": False, "reference": {"name": "off", "notpm": 64000}}]
    spec["reference"] = {
        "source": " and ".join(_userinfo_url(pw) for pw in PASSWORDS),
        "url": f"https://u:{by_id['long'].text}@example.com/post?token={by_id['space'].text}",
        "comparisons": []}
    description = "\n".join(m for pw in PASSWORDS for m in _messages(pw)[:3])
    conn.execute("UPDATE experiments SET spec = ?, description = ?",
                 (json.dumps(spec), description))
    conn.commit()
    conn.close()


def _every_password_leak(folder: Path) -> list[str]:
    """``file: fragment`` for every file under ``folder`` holding any password or either end.

    Each file is read once. Every password starts with ``LEFT`` (tests.support.hostile_passwords),
    in its UTF-8 and its JSON spelling alike, so a file where the first password finds no
    ``LEFT`` holds no password: what that password finds (``RIGHT``) is what all of them find.
    """
    assert all(pw.text.startswith(LEFT) for pw in PASSWORDS)
    leaks = set()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        data = path.read_bytes()
        found = set(PASSWORDS[0].leaked_in(data))
        if LEFT in found:
            found = {fragment for pw in PASSWORDS for fragment in pw.leaked_in(data)}
        leaks.update(f"{path.relative_to(folder)}: {fragment}" for fragment in found)
    return sorted(leaks)


@pytest.fixture(scope="module")
def every_password_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A case folder holding ``r.sqlite`` as :func:`_store_with_every_password` writes it,
    written once for the report's and the bundle's tests."""
    return _written_once(tmp_path_factory.mktemp("every-password") / "case",
                         _store_with_every_password)


def test_the_report_never_holds_a_password(case_dir: Path, cli: CliRun,
                                           every_password_store: Path) -> None:
    db = _copied_into(every_password_store, case_dir)
    _plant_in_stored_spec(db)
    code, out, err = cli(["report", EXPERIMENT, "--db", str(db), "-o", str(case_dir / "out"),
                          "--no-png"])
    assert code == 0, err
    html = (case_dir / "out" / "report.html").read_text()
    assert "Reproduction scorecard" in html and "example.com/post" in html  # the link stays
    assert not _every_password_leak(case_dir / "out"), _where(html)
    code, out, err = cli(["compare", EXPERIMENT, "--db", str(db)])
    assert code == 0 and "scorecard" in out.lower(), err
    for pw in PASSWORDS:
        assert not pw.leaked_in(out + err), _where(out + err)
    code, out, err = cli(["show", str(_failed_run(db)), "--db", str(db)])
    assert "cannot use the results database" in out, out + err  # the stored error, masked
    for pw in PASSWORDS:
        assert not pw.leaked_in(out + err), _where(out + err)


def _failed_run(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute("SELECT id FROM runs WHERE status = 'failed'").fetchone()[0])
    finally:
        conn.close()


def test_a_bundle_never_holds_a_password(case_dir: Path, cli: CliRun,
                                         every_password_store: Path) -> None:
    db = _copied_into(every_password_store, case_dir)
    bundle = case_dir / "study.tar.gz"
    code, out, err = cli(["bundle", EXPERIMENT, "--db", str(db), "-o", str(bundle),
                          "--no-png"])
    assert code == 0, err  # masked text is no credential: the bundle is made
    unpacked = case_dir / "unpacked"
    with tarfile.open(bundle) as archive:
        names = [Path(n).name for n in archive.getnames()]
        archive.extractall(unpacked, filter="data")
    assert MANIFEST in names and RESULTS in names and "report.html" in names, names
    assert not _every_password_leak(unpacked)
    assert not _every_password_leak(case_dir)

    _plant_in_stored_spec(db)  # an older database: the bundle refuses to publish it
    refused = case_dir / "refused.tar.gz"
    code, out, err = cli(["bundle", EXPERIMENT, "--db", str(db), "-o", str(refused),
                          "--no-png"])
    assert code == 2 and "would carry a credential" in err and not refused.exists(), err
    for pw in PASSWORDS:
        assert not pw.leaked_in(out + err), _where(out + err)
