"""Which flushbench recorded a run: the commit and local changes of the checkout it ran from,
and the words ``show`` and the report's methodology use for it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from analysis.report.sentences import code_text, code_versions_text
from core.paths import REPO_ROOT
from flushbench import __version__
from runner.run import metadata


def _git(*args: str, cwd: Path = REPO_ROOT) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True,
                          check=True).stdout.strip()


@pytest.fixture(autouse=True)
def _fresh_cache():
    metadata.code_version.cache_clear()
    yield
    metadata.code_version.cache_clear()


def test_a_checkout_names_its_commit_and_whether_its_code_differs() -> None:
    got = metadata.code_version()
    assert got["version"] == __version__
    assert got["commit"] == _git("rev-parse", "HEAD")
    changed = _git("status", "--porcelain", "--untracked-files=no", "--",
                   *metadata.CODE_PATHS)
    assert got["modified"] is bool(changed)


def test_a_change_to_code_is_modified_and_a_change_to_docs_is_not(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = tmp_path / "checkout"
    for folder in ("runner", "docs"):
        (repo / folder).mkdir(parents=True)
        (repo / folder / "a.txt").write_text("one\n")
    _git("init", "-q", cwd=repo)
    _git("-c", "user.email=t@example.org", "-c", "user.name=t", "commit", "-q",
         "--allow-empty", "-m", "empty", cwd=repo)
    _git("add", ".", cwd=repo)
    _git("-c", "user.email=t@example.org", "-c", "user.name=t", "commit", "-q", "-m", "files",
         cwd=repo)
    monkeypatch.setattr(metadata, "REPO_ROOT", repo)
    assert metadata.code_version()["modified"] is False
    (repo / "docs" / "a.txt").write_text("two\n")
    metadata.code_version.cache_clear()
    assert metadata.code_version()["modified"] is False
    (repo / "runner" / "a.txt").write_text("two\n")
    metadata.code_version.cache_clear()
    got = metadata.code_version()
    assert got["modified"] is True and got["commit"] == _git("rev-parse", "HEAD", cwd=repo)


def test_no_checkout_or_no_git_records_the_version_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metadata, "REPO_ROOT", tmp_path)  # an installed copy: no .git
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    assert metadata.code_version() == {"version": __version__, "commit": None,
                                       "modified": None}
    metadata.code_version.cache_clear()
    monkeypatch.setattr(metadata, "REPO_ROOT", REPO_ROOT)
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))  # git not installed: an empty PATH
    assert metadata.code_version()["commit"] is None


def test_the_words_for_one_run_and_for_a_study() -> None:
    at = {"flushbench": {"version": "0.1.0", "commit": "e7c2de0" + "0" * 33, "modified": False}}
    changed = {"flushbench": {"version": "0.1.0", "commit": "d6a249b" + "1" * 33,
                              "modified": True}}
    loose = {"flushbench": {"version": "0.1.0", "commit": None, "modified": None}}
    assert code_text(at) == "flushbench 0.1.0 at e7c2de0"
    assert code_text(changed) == "flushbench 0.1.0 at d6a249b with local changes to its code"
    assert code_text(loose) == "flushbench 0.1.0 (not run from a git checkout)"
    assert code_text({"allocator": None}) == code_text(None) == "not recorded"
    assert code_versions_text([at, at]) == "flushbench 0.1.0 at e7c2de0 (all 2 runs)"
    assert code_versions_text([at]) == "flushbench 0.1.0 at e7c2de0"
    assert code_versions_text([at, {}, None, at, changed]) == (
        "flushbench 0.1.0 at e7c2de0 (2 runs); flushbench 0.1.0 at d6a249b with local changes"
        " to its code (1 run); not recorded (1 run)")
    assert code_versions_text([]) == code_versions_text([None]) == "–"  # none started


def test_pinned_runs_the_pinned_checkout_s_code_not_the_folder_it_is_called_from(
        tmp_path: Path) -> None:
    """``scripts/pinned.sh`` runs flushbench from a checkout pinned at a commit while the
    caller's folder (where relative paths mean what they mean) holds edited code: ``--version``
    names the commit, unmodified, and the pinned folder. It named the caller's edited checkout
    while ``python -c`` put the current folder first on ``sys.path``."""
    here = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--shared", str(REPO_ROOT), str(here)], check=True)
    (here / ".venv").symlink_to(REPO_ROOT / ".venv", target_is_directory=True)
    with (here / "core" / "paths.py").open("a") as edited:  # code edited while a study runs
        edited.write("# an edit\n")
    commit = _git("rev-parse", "HEAD", cwd=here)
    pinned = tmp_path / "pinned"
    done = subprocess.run([str(here / "scripts" / "pinned.sh"), "--at", commit, "--dir",
                           str(pinned), "--", "--version"], cwd=here, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == f"flushbench {__version__} at {commit} from {pinned}", (
        done.stdout + done.stderr)


def test_a_pinned_worker_is_one_queue_stop_can_ask_to_stop() -> None:
    """A study runs for hours through ``scripts/pinned.sh``; ``flushbench queue stop`` signals
    only processes whose command line is a flushbench worker. pinned.sh once ran
    ``python -c '…main()' run …``, which queue stop cannot tell from another Python program: it
    left the study's worker running. It runs the venv's console script now."""
    from runner.fleet.workers import is_worker_command

    script = (REPO_ROOT / "scripts" / "pinned.sh").read_text()
    last = [line for line in script.splitlines() if line.startswith("exec ")][-1]
    assert last == 'exec "$here/.venv/bin/flushbench" "$@"', last
    # Its process, as /proc shows it: the console script's Python, the script, the verb.
    python = str(REPO_ROOT / ".venv" / "bin" / "python")
    assert is_worker_command([python, str(REPO_ROOT / ".venv" / "bin" / "flushbench"), "run",
                              "experiments/generations-today.yaml", "--db", "s.sqlite"])
