"""Where the results database's SQL lives (docs/architecture.md): in ``store/`` and in one query
module per package (``analysis/reading/query.py``) — nowhere else; and within ``store/``, every
statement that changes the state of a run or a worker is the run ledger's (``store/ledger/``).

Every module of ``core/``, ``flushbench/``, ``runner/`` and ``analysis/`` is read with ``ast``
and each call that builds a statement is reported: SQLAlchemy's ``select``, ``update``,
``insert``, ``delete`` and ``text`` (imported by name, under an alias, or reached through the
``sqlalchemy`` module), and ``.execute(``, ``.scalar(``, ``.scalars(``,
``.exec_driver_sql(`` given a string literal (raw SQL). Only the modules of
:data:`SQL_HOMES` may hold them. A statement writing a run-state table (``update(Run)``,
``insert(Worker)``…) or a new row of one (``Run(…)``, ``RunEvent(…)``, ``Worker(…)``) is
reported anywhere but under :data:`LEDGER` (``store/`` included).

The runner also speaks SQL to the server it measures (``SHOW GLOBAL STATUS``, ``SET GLOBAL``,
``CREATE DATABASE`` over PyMySQL): that is no statement on the results database. The modules
doing it are named in :data:`SERVER_UNDER_TEST`; there literal SQL is let through, and only
while the module imports neither SQLAlchemy, ``sqlite3`` nor ``store`` (so it cannot reach a
results database) and still holds literal SQL (so the list does not outlive its reason).

Parsing is what these checks cost, so each module is parsed and walked once for all of them
(:class:`CodeBase`, shared by this file's tests).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("core", "flushbench", "runner", "analysis")

#: Modules allowed to build statements, as paths relative to the repository (a folder: every
#: module under it).
SQL_HOMES = ("store/", "analysis/reading/query.py")
#: The run ledger: the only home of statements that change a run's or a worker's state.
LEDGER = "store/ledger/"
#: The tables of run state (models of ``store/models.py``): runs, their events, workers.
RUN_STATE_TABLES = frozenset({"Run", "RunEvent", "Worker"})
#: Builders that change a table.
WRITERS = frozenset({"update", "insert", "delete"})
#: Modules that name the run-state models without writing them: their definitions and the
#: frozen migration history.
RUN_STATE_DEFINITIONS = ("store/models.py", "store/migrations/")

#: Modules whose literal SQL goes to the mysqld under test (PyMySQL cursors), with what it is.
SERVER_UNDER_TEST = {
    "runner/server/sandbox.py": "shutdown, draining dirty pages (SET GLOBAL, SHOW STATUS)",
    "runner/run/sampler.py": "SHOW GLOBAL STATUS / SHOW ENGINE INNODB STATUS each tick",
    "runner/workloads/base.py": "creating the workload's database",
}
#: Imports through which a module could reach a results database.
RESULTS_DB_IMPORTS = ("sqlalchemy", "sqlite3", "store")

#: SQLAlchemy's statement builders (``sqlalchemy.select`` and the dialects' ``insert``).
BUILDERS = frozenset({"select", "update", "insert", "delete", "text"})
#: Modules whose names are the builders above.
SQLALCHEMY_MODULES = ("sqlalchemy",)
#: Methods that send a statement; with a string literal as first argument they send raw SQL.
EXECUTORS = frozenset({"execute", "scalar", "scalars", "exec_driver_sql"})


@dataclass(frozen=True)
class SqlCall:
    """One call building or sending a statement: where, and what."""

    path: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line} {self.what}"


@dataclass(frozen=True)
class ModuleSql:
    """What the checks ask of one module, from one parse and one walk of it: its statements
    (:func:`sql_calls`), its run-state writes (:func:`run_state_writes`) and the top-level
    packages it imports, function-level imports too."""

    sql: tuple[SqlCall, ...]
    run_state: tuple[SqlCall, ...]
    imports: frozenset[str]


def _is_sqlalchemy(module: str | None) -> bool:
    return module is not None and (module == "sqlalchemy" or module.startswith("sqlalchemy."))


def _sqlalchemy_names(imports: list[ast.Import | ast.ImportFrom]
                      ) -> tuple[dict[str, str], set[str]]:
    """Local names bound to a builder (``{local: builder}``) and to a sqlalchemy module."""
    builders: dict[str, str] = {}
    modules: set[str] = set()
    for node in imports:
        if isinstance(node, ast.ImportFrom) and _is_sqlalchemy(node.module):
            for alias in node.names:
                if alias.name in BUILDERS:
                    builders[alias.asname or alias.name] = alias.name
                elif alias.name[:1].islower():  # ``from sqlalchemy import sql``: a module
                    modules.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if _is_sqlalchemy(alias.name):
                    modules.add(alias.asname or alias.name.split(".")[0])
    return builders, modules


def _imported_packages(imports: list[ast.Import | ast.ImportFrom]) -> frozenset[str]:
    """The top-level package of everything a module imports (function-level imports too)."""
    names = set()
    for node in imports:
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif node.module and not node.level:
            names.add(node.module.split(".")[0])
    return frozenset(names)


def _root_name(node: ast.expr) -> str | None:
    """``sa`` of ``sa.sql.expression``; None when the chain does not start at a name."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _is_literal_sql(node: ast.expr) -> bool:
    return (isinstance(node, ast.Constant) and isinstance(node.value, str)) or isinstance(
        node, ast.JoinedStr)


def _sql_call(node: ast.Call, builders: dict[str, str], modules: set[str],
              path: str) -> SqlCall | None:
    """The call as a statement built or literal SQL sent, None when it is neither."""
    func = node.func
    if isinstance(func, ast.Name) and func.id in builders:
        return SqlCall(path, node.lineno, f"{builders[func.id]}(")
    if isinstance(func, ast.Attribute):
        if func.attr in BUILDERS and _root_name(func.value) in modules:
            return SqlCall(path, node.lineno, f"{ast.unparse(func)}(")
        if func.attr in EXECUTORS and node.args and _is_literal_sql(node.args[0]):
            return SqlCall(path, node.lineno, f".{func.attr}(<literal SQL>)")
    return None


def _run_state_write(node: ast.Call, builders: dict[str, str], modules: set[str],
                     path: str) -> SqlCall | None:
    """The call as a write of a run-state table, None when it is none."""
    func = node.func
    if isinstance(func, ast.Name) and func.id in RUN_STATE_TABLES:
        return SqlCall(path, node.lineno, f"{func.id}(")
    if isinstance(func, ast.Name) and builders.get(func.id) in WRITERS:
        builder = builders[func.id]
    elif (isinstance(func, ast.Attribute) and func.attr in WRITERS
          and _root_name(func.value) in modules):
        builder = func.attr
    else:
        return None
    table = node.args[0] if node.args else None
    if isinstance(table, ast.Name) and table.id in RUN_STATE_TABLES:
        return SqlCall(path, node.lineno, f"{builder}({table.id})")
    return None


def read_module(source: str, path: str) -> ModuleSql:
    """Everything the checks ask of ``source``: parsing dominates their cost, so each module
    is parsed and walked once for all of them (the calls keep ``ast.walk``'s order, then are
    sorted by line)."""
    tree = ast.parse(source, filename=path)
    calls: list[ast.Call] = []
    imports: list[ast.Import | ast.ImportFrom] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            calls.append(node)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            imports.append(node)
    builders, modules = _sqlalchemy_names(imports)
    sql = [c for node in calls if (c := _sql_call(node, builders, modules, path))]
    run_state = [c for node in calls
                 if (c := _run_state_write(node, builders, modules, path))]
    return ModuleSql(sql=tuple(sorted(sql, key=lambda c: c.line)),
                     run_state=tuple(sorted(run_state, key=lambda c: c.line)),
                     imports=_imported_packages(imports))


def sql_calls(source: str, path: str) -> list[SqlCall]:
    """Every call in ``source`` that builds a statement or sends literal SQL."""
    return list(read_module(source, path).sql)


def run_state_writes(source: str, path: str) -> list[SqlCall]:
    """Every call in ``source`` that writes a run-state table: a writing builder given one
    (``update(Run)``, ``sa.delete(Worker)``) or a new row of one (``RunEvent(…)``)."""
    return list(read_module(source, path).run_state)


def talks_to_the_server_only(module: ModuleSql) -> bool:
    """Whether a module of :data:`SERVER_UNDER_TEST` sends only literal SQL (no builder) and
    imports nothing that reaches a results database."""
    return (
        all(c.what.startswith(".") for c in module.sql)
        and not module.imports & set(RESULTS_DB_IMPORTS)
    )


def is_sql_home(path: str) -> bool:
    """Whether a module (path relative to the repository) may build statements."""
    return any(path == home or (home.endswith("/") and path.startswith(home))
               for home in SQL_HOMES)


class CodeBase:
    """The modules under a root, each read and parsed at most once however many checks ask
    (parsing the code base is most of what the checks cost)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._modules: dict[str, ModuleSql] = {}

    def paths(self, package: str) -> list[str]:
        """The modules of ``package``, relative to the root, in path order."""
        return [file.relative_to(self.root).as_posix()
                for file in sorted((self.root / package).rglob("*.py"))]

    def module(self, path: str) -> ModuleSql:
        """What the module at ``path`` (relative to the root) holds."""
        if path not in self._modules:
            source = (self.root / path).read_text(encoding="utf-8")
            self._modules[path] = read_module(source, path)
        return self._modules[path]


def misplaced_sql(code: CodeBase, packages: tuple[str, ...] = SCANNED) -> list[SqlCall]:
    """The calls building SQL in modules of ``packages`` that are no SQL home, in path order."""
    out = []
    for package in packages:
        for path in code.paths(package):
            if is_sql_home(path):
                continue
            module = code.module(path)
            if path in SERVER_UNDER_TEST and talks_to_the_server_only(module):
                continue
            out.extend(module.sql)
    return out


def run_state_outside_the_ledger(code: CodeBase,
                                 packages: tuple[str, ...] = (*SCANNED, "store")
                                 ) -> list[SqlCall]:
    """The writes of run state in modules of ``packages`` outside :data:`LEDGER`."""
    out = []
    for package in packages:
        for path in code.paths(package):
            if path.startswith(LEDGER) or path.startswith(RUN_STATE_DEFINITIONS):
                continue
            out.extend(code.module(path).run_state)
    return out


@pytest.fixture(scope="module")
def code_base() -> CodeBase:
    """The repository's modules, parsed once for every check of this file (a module fixture
    also keeps those checks in one xdist worker: tests/support/parallel.py)."""
    return CodeBase(ROOT)


def test_sql_lives_in_the_store_and_the_query_modules(code_base: CodeBase) -> None:
    misplaced = misplaced_sql(code_base)
    assert not misplaced, (
        "statements outside store/ and analysis/reading/query.py (move each into a named function"
        " there; run state: the ledger, store/ledger/):\n"
        + "\n".join(f"  {c}" for c in misplaced))


def test_run_state_changes_only_in_the_ledger(code_base: CodeBase) -> None:
    found = run_state_outside_the_ledger(code_base)
    assert not found, (
        "run-state writes outside store/ledger/ (move each into the ledger module of its"
        " job):\n" + "\n".join(f"  {c}" for c in found))


def test_the_checker_reports_a_run_state_write_outside_the_ledger(tmp_path: Path) -> None:
    (tmp_path / "store" / "ledger").mkdir(parents=True)
    (tmp_path / "store" / "bundles.py").write_text(
        "import sqlalchemy as sa\n"
        "from sqlalchemy import update\n"
        "from store.models import Experiment, Run, RunEvent, Worker\n\n"
        "def f(s):\n"
        "    s.execute(update(Run).values(status='done'))\n"
        "    s.execute(sa.delete(Worker))\n"
        "    s.add(RunEvent(run_id=1))\n"
        "    s.execute(update(Experiment).values(host_class=None))\n")
    (tmp_path / "store" / "ledger" / "finish.py").write_text(
        "from sqlalchemy import update\nfrom store.models import Run\n\n"
        "def f(s):\n    s.execute(update(Run))\n    s.add(Run())\n")
    found = [str(c) for c in run_state_outside_the_ledger(CodeBase(tmp_path), ("store",))]
    assert found == [
        "store/bundles.py:6 update(Run)",
        "store/bundles.py:7 delete(Worker)",
        "store/bundles.py:8 RunEvent(",
    ], found


def test_the_server_under_test_modules_still_speak_sql_to_it(code_base: CodeBase) -> None:
    """An entry of SERVER_UNDER_TEST whose literal SQL is gone is removed from the list."""
    silent = [path for path in SERVER_UNDER_TEST if not code_base.module(path).sql]
    assert not silent, f"no SQL left in {silent}: remove them from SERVER_UNDER_TEST"


def test_the_checker_reports_a_module_building_sql(tmp_path: Path) -> None:
    module = tmp_path / "runner" / "fleet" / "sneaky.py"
    module.parent.mkdir(parents=True)
    module.write_text(
        "import sqlalchemy as sa\n"
        "from sqlalchemy import select as pick, update\n"
        "from store.models import Run\n\n"
        "def ids(s):\n"
        "    s.execute(update(Run).values(status='done'))\n"
        "    s.execute('DELETE FROM runs')\n"
        "    s.scalar(sa.text('SELECT 1'))\n"
        "    return s.scalars(pick(Run.id)).all()\n"
    )
    # A module that used to be a SQL home is no longer one.
    (tmp_path / "runner" / "fleet" / "queue.py").write_text(
        "from sqlalchemy import select\n\ndef q():\n    return select(1)\n")
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "runs.py").write_text(
        "from sqlalchemy import delete\n\ndef d():\n    return delete(1)\n")
    # A server-under-test module that starts reaching the results database is reported too.
    sandbox = tmp_path / "runner" / "server" / "sandbox.py"
    sandbox.parent.mkdir()
    sandbox.write_text("import sqlite3\n\ndef f(cur):\n    cur.execute('SHUTDOWN')\n")
    found = [str(c) for c in misplaced_sql(CodeBase(tmp_path), ("runner", "store"))]
    assert found == [
        "runner/fleet/queue.py:4 select(",
        "runner/fleet/sneaky.py:6 update(",
        "runner/fleet/sneaky.py:7 .execute(<literal SQL>)",
        "runner/fleet/sneaky.py:8 sa.text(",
        "runner/fleet/sneaky.py:9 select(",
        "runner/server/sandbox.py:4 .execute(<literal SQL>)",
    ], found


def test_a_query_method_on_something_else_is_not_sql() -> None:
    """Reading a file, a cursor fed a variable, a dict's ``update``: not statements."""
    source = ("def f(d, path, cur, stmt):\n"
              "    d.update(a=1)\n"
              "    path.read_text()\n"
              "    cur.execute(stmt)\n"
              "    return {1}.union({2})\n")
    assert sql_calls(source, "runner/x.py") == []
