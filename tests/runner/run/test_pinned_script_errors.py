"""``scripts/pinned.sh`` says one sentence of its own for each wrong argument (never git's
``fatal:`` lines, never bash's ``unbound variable``), exit 2, and makes no checkout; and
``flushbench --version`` without git says git is not installed.

One table: each row runs the script of a shared clone of this repository (``git clone
--shared``: seconds, no copy of the objects) with its arguments and a ``--dir`` in the row's
own folder, which must not exist afterwards.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from core.paths import REPO_ROOT
from runner.run import metadata
from tests.cli.conftest import CliRun
from tests.support.system_tools import which

SCRIPT = "scripts/pinned.sh"


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    here = tmp_path_factory.mktemp("pinned") / "clone"
    subprocess.run(["git", "clone", "-q", "--shared", str(REPO_ROOT), str(here)], check=True)
    (here / ".venv").symlink_to(REPO_ROOT / ".venv", target_is_directory=True)
    return here


def _no_git_path(folder: Path) -> str:
    """A PATH holding the tools the script uses besides git (bash, dirname, basename)."""
    folder.mkdir()
    for tool in ("bash", "dirname", "basename", "env", "cp"):
        found = which(tool)
        assert found, tool
        (folder / tool).symlink_to(found)
    return str(folder)


@dataclass(frozen=True)
class Case:
    id: str
    args: list[str]
    expect: list[str]
    no_git: bool = False


DIR = "{dir}"
CASES = [
    Case("at-without-a-value", ["--at"], ["--at needs a value"]),
    Case("at-empty", ["--at", "", "--", "--version"], ["--at needs a value"]),
    Case("at-followed-by-the-separator", ["--at", "--", "--version"], ["--at needs a value"]),
    Case("dir-without-a-value", ["--dir"], ["--dir needs a value"]),
    Case("unknown-option", ["--bogus", "--", "--version"], ["unknown option --bogus"]),
    Case("nothing-after-the-separator", ["--dir", DIR, "--"], ["no flushbench arguments"]),
    Case("missing-commit", ["--at", "0123456789abcdef0123", "--dir", DIR, "--", "--version"],
         ["--at 0123456789abcdef0123 names no commit", "git log --oneline"]),
    Case("unknown-name", ["--at", "no-such-branch", "--dir", DIR, "--", "--version"],
         ["--at no-such-branch names no commit"]),
    Case("tree-id", ["--at", "HEAD^{tree}", "--dir", DIR, "--", "--version"],
         ["names a tree, not a commit"]),
    Case("file-id", ["--at", "HEAD:README.md", "--dir", DIR, "--", "--version"],
         ["names a blob, not a commit"]),
    Case("dir-is-a-file", ["--dir", "{file}", "--", "--version"],
         ["is a file, not a folder"]),
    Case("git-not-installed", ["--dir", DIR, "--", "--version"], ["git is not installed"],
         no_git=True),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_pinned_script_error(case: Case, clone: Path, tmp_path: Path) -> None:
    pinned = tmp_path / "pinned"
    afile = tmp_path / "a-file"
    afile.write_text("mine\n")
    args = [a.replace(DIR, str(pinned)).replace("{file}", str(afile)) for a in case.args]
    env = dict(os.environ)
    if case.no_git:
        env["PATH"] = _no_git_path(tmp_path / "bin")
    done = subprocess.run([str(clone / SCRIPT), *args], cwd=clone, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("scripts/pinned.sh: "), done.stderr
    for fragment in case.expect:
        assert fragment in lines[0], (fragment, lines[0])
    assert "fatal" not in done.stderr and "unbound variable" not in done.stderr
    assert not pinned.exists() and afile.read_text() == "mine\n"


def test_version_without_git_says_git_is_not_installed(
        cli: CliRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A checkout read without git: not "no git checkout" (there is one) but why no commit."""
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    metadata.code_version.cache_clear()
    try:
        code, out, err = cli(["--version"])
    finally:
        metadata.code_version.cache_clear()
    assert code == 0, err
    assert "git is not installed" in out and "no git checkout" not in out, out
