"""A reader that closes the pipe (`flushbench status | head -1`): exit 0, nothing said.

The reader's end is closed before the verb prints anything, so its first write meets a pipe
nobody reads (what `head` does once it has its lines, deterministically). typer and rich turn
that into exit 1; the CLI boundary (``flushbench/cli/__init__.py``) recognises it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from store.migrate import head_revision
from tests.support.recorded import ROOT

DB = ROOT / "tests" / "fixtures" / "results-db" / f"rev-{head_revision()}.sqlite"
FB = str(Path(sys.executable).with_name("flushbench"))

VERBS = [["status"], ["mext", "1"], ["mext", "1", "--csv"], ["compare", "study-short"],
         ["show", "1"]]


@pytest.mark.parametrize("verb", VERBS, ids=["-".join(v) for v in VERBS])
def test_reader_closing_the_pipe_is_a_clean_exit(verb: list[str], tmp_path: Path) -> None:
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first line
    try:
        done = subprocess.run([FB, *verb, "--db", str(DB)], stdout=write,
                              stderr=subprocess.PIPE, text=True, timeout=300, check=False,
                              env={**os.environ, "FLUSHBENCH_CACHE_DIR": str(tmp_path),
                                   "FLUSHBENCH_WORK": str(tmp_path / "work")})
    finally:
        os.close(write)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stderr == ""
