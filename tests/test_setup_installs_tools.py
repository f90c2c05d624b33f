"""``scripts/setup.sh`` installs every system command the test suite looks for.

A fresh machine has only what set-up installs; a machine someone once built a server on has
more, and there a missing install step hides (``bison`` did: CI stayed green while ``make test``
failed on every fresh machine). This guard reads what the tests look for — every
``system_tools.which``/``missing`` call and every absolute ``/usr/…/bin/…`` path in ``tests/`` —
maps each command to its Debian package (``tests/support/system_tools.py``) and checks that
set-up's package list (``scripts/setup.sh --list-packages``) holds it, unless the command is one
of the documented optional tools no registry ships.
"""

from __future__ import annotations

import ast
import re
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest

from tests.support import system_tools

REPO = Path(__file__).resolve().parents[1]
SETUP = REPO / "scripts" / "setup.sh"
BUILD_SERVER = REPO / "scripts" / "build-server.sh"
TESTS = REPO / "tests"
#: ``/usr/sbin/mariadbd``, ``/usr/bin/sysbench``: a path a test names is a command it needs.
_COMMAND_PATH = re.compile(r"^/usr/(?:local/)?s?bin/([A-Za-z0-9_.+-]+)$")
#: What :func:`commands_the_tests_use` finds: command → the test files that look for it, and
#: every direct ``shutil.which`` call.
TestsUse = tuple[dict[str, list[str]], list[str]]


def setup_packages(script: Path) -> set[str]:
    """The Debian packages ``script`` installs (its ``--list-packages`` output)."""
    done = subprocess.run(["bash", str(script), "--list-packages"], capture_output=True,
                          text=True, timeout=30, check=True)
    return set(done.stdout.split())


def build_server_packages() -> set[str]:
    """The build dependencies ``scripts/build-server.sh`` needs (its ``packages=(…)`` line)."""
    match = re.search(r"^packages=\(([^)]*)\)", BUILD_SERVER.read_text(), re.MULTILINE)
    assert match, "scripts/build-server.sh has no packages=(…) line"
    return set(match.group(1).split())


def _probes(path: Path) -> tuple[list[str], list[str]]:
    """Commands one test file looks for, and its direct ``shutil.which`` calls (places)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    commands, direct = [], []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            owner_name = owner.id if isinstance(owner, ast.Name) else None
            if owner_name == "shutil" and node.func.attr == "which":
                direct.append(f"{path.relative_to(REPO)}:{node.lineno}")
            if owner_name == "system_tools" and node.func.attr in ("which", "missing"):
                commands += [a.value for a in node.args
                             if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            match = _COMMAND_PATH.match(node.value)
            if match:
                commands.append(match.group(1))
    return commands, direct


def commands_the_tests_use() -> TestsUse:
    """Command → the test files that look for it; and every direct ``shutil.which`` call."""
    used: dict[str, list[str]] = defaultdict(list)
    direct: list[str] = []
    for path in sorted(TESTS.rglob("*.py")):
        if "fixtures" in path.relative_to(TESTS).parts or path.name == "system_tools.py":
            continue
        commands, calls = _probes(path)
        for command in commands:
            used[command].append(str(path.relative_to(REPO)))
        direct += calls
    return dict(used), direct


def problems(script: Path, used: dict[str, list[str]]) -> list[str]:
    """Every command the tests use (``used``: :func:`commands_the_tests_use`) that ``script``
    does not install, one sentence each."""
    packages = setup_packages(script)
    out = []
    for command, places in sorted(used.items()):
        if command in system_tools.OPTIONAL:
            continue
        package = system_tools.FROM_SETUP.get(command)
        where = ", ".join(sorted(set(places)))
        if package is None:
            out.append(f"`{command}` ({where}) is not in tests/support/system_tools.py: add it"
                       " with its Debian package, and the package to scripts/setup.sh")
        elif package not in packages:
            out.append(f"`{command}` ({where}) comes from Debian's {package}, which"
                       f" {script.name} does not install: add it to APT_PACKAGES")
    for package in sorted(build_server_packages() - packages):
        out.append(f"scripts/build-server.sh needs {package}, which {script.name} does not"
                   " install (its tests configure trees): add it to APT_PACKAGES")
    return out


@pytest.fixture(scope="module")
def tests_use() -> TestsUse:
    """:func:`commands_the_tests_use`, read once for the module: it parses every test file
    (about 0.7 CPU-s), the files do not change while the module runs, and eight tests read it."""
    return commands_the_tests_use()


def test_setup_installs_every_command_the_tests_use(tests_use: TestsUse) -> None:
    assert problems(SETUP, tests_use[0]) == []


def test_every_tool_lookup_goes_through_the_table(tests_use: TestsUse) -> None:
    _, direct = tests_use
    assert direct == [], "use tests.support.system_tools.which instead of shutil.which"


def test_the_table_names_only_packages_setup_installs() -> None:
    packages = setup_packages(SETUP)
    assert sorted(set(system_tools.FROM_SETUP.values()) - packages) == []


def test_the_readme_names_each_optional_tool_and_how_to_get_it() -> None:
    readme = (REPO / "README.md").read_text()
    for command, how in system_tools.OPTIONAL.items():
        script = how.split()[0]
        assert command in readme and script in readme, (command, script)


def test_the_guard_sees_the_commands_it_must(tests_use: TestsUse) -> None:
    used, _ = tests_use
    for command in ("bison", "cmake", "patchelf", "mariadbd", "sysbench", "pg_dump"):
        assert command in used, command


@pytest.mark.parametrize(("package", "command"), [
    ("bison", "bison"), ("cmake", "cmake"), ("patchelf", "patchelf"), ("sysbench", "sysbench"),
    ("e2fsprogs", "chattr"),
])
def test_dropping_a_package_from_setup_fails_the_guard(package: str, command: str,
                                                       tmp_path: Path, tests_use: TestsUse) -> None:
    text = SETUP.read_text()
    start = text.index("APT_PACKAGES=(")
    end = text.index("\n)\n", start)
    block = re.sub(rf"(?<![\w.-]){re.escape(package)}(?![\w.-])", "", text[start:end])
    dropped = tmp_path / "setup.sh"
    dropped.write_text(text[:start] + block + text[end:])
    assert package not in setup_packages(dropped)
    found = problems(dropped, tests_use[0])
    assert any(f"`{command}`" in line or f"needs {package}" in line for line in found), found
