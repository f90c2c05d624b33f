"""Hostile ``mext --grep`` patterns (issue 49, cause 9): refused before they are compiled.

One table, one row per pattern, through the real entry point on the committed current-schema
database: a repetition of a billion, repeats of repeats, thousands of nested groups (too long),
hundreds nested (too deep for the parser), a pattern of over 1,000 characters and one that is
no expression. Each is one ``error: --grep: …`` line, exit 2, no internal error; a child process
under a 2 GiB address-space limit shows that nothing is allocated on the way. Sane patterns
still select their counters.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from store.migrate import head_revision
from tests.cli.conftest import CliRun
from tests.support.recorded import ROOT

DB = ROOT / "tests" / "fixtures" / "results-db" / f"rev-{head_revision()}.sqlite"

CASES = [
    ("a-billion-repeats", "a{1000000000}", "repeats 1,000,000,000 times, more than the 1,000"),
    ("an-open-ended-huge-repeat", "x{2000000,}", "repeats 2,000,000 times"),
    ("repeats-of-repeats", "(?:(?:a{1000}){1000}){1000}", "multiplying past 100,000"),
    ("5000-nested-groups", "(" * 5000 + "a" + ")" * 5000, "10,001 characters long"),
    ("400-nested-groups", "(" * 400 + "a" + ")" * 400, "too deeply nested to compile"),
    ("over-1000-characters", "innodb|" * 200, "1,400 characters long"),
    ("not-an-expression", "innodb_(buffer", "is not a regular expression"),
]


@pytest.mark.parametrize(("pattern", "expect"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_hostile_grep_is_one_sentence(pattern: str, expect: str, cli: CliRun,
                                      tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLUSHBENCH_CACHE_DIR", str(tmp_path))
    code, out, err = cli(["mext", "1", "--grep", pattern, "--db", str(DB)])
    assert "internal error" not in err and "Traceback" not in err
    assert code == 2, (out, err)
    assert err.startswith("error: --grep: --grep ") and err.count("error:") == 1, err
    assert expect in err, err


def test_the_worst_patterns_allocate_nothing_under_a_memory_limit(tmp_path: Path) -> None:
    """The patterns that asked for gigabytes, in a child capped at 2 GiB."""
    child = ("import resource, sys\n"
             f"resource.setrlimit(resource.RLIMIT_AS, ({2 << 30}, {2 << 30}))\n"
             "from flushbench.cli import main\n"
             "main()\n")
    for pattern in ("a{1000000000}", "(?:(?:a{1000}){1000}){1000}", "(" * 5000 + ")" * 5000):
        done = subprocess.run(
            [sys.executable, "-c", child, "mext", "1", "--grep", pattern, "--db", str(DB)],
            capture_output=True, text=True, timeout=300, check=False,
            env={**os.environ, "FLUSHBENCH_CACHE_DIR": str(tmp_path)},
            preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_CORE, (0, 0)))
        assert done.returncode == 2 and "MemoryError" not in done.stderr, done.stderr[-2000:]
        assert done.stderr.startswith("error: --grep: "), done.stderr[-2000:]


@pytest.mark.parametrize("pattern", ["innodb_(buffer|log)", r"pages_\w{4,5}$", "DIRTY"])
def test_sane_patterns_still_select(pattern: str, cli: CliRun, tmp_path: Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLUSHBENCH_CACHE_DIR", str(tmp_path))
    code, out, err = cli(["mext", "1", "--grep", pattern, "--db", str(DB)])
    assert code == 0, err
    assert "Innodb_buffer_pool_pages_dirty" in out
