"""Real runs whose driver prints hostile JSON: each run fails with the line and the reason.

The stand-in is the real ``tpcc`` for everything but ``run`` (so it passes the identity and
format checks, and loads the dataset); its ``run`` prints the recorded format-1 output of a real
run with one line made hostile — a NaN New-Order count, negative counts with a negative TpmC,
a sequence number of 10^30 — one per repetition. Before format checking these became a
misleading database error, a *done* run with NOTPM −15,000, and an internal error leaving the
run ``running``. The parser's table of every such line is
tests/runner/workloads/test_tpcc_json_contract.py.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from sqlalchemy import select

from core.paths import tpcc_binary
from runner.fleet.worker import run_experiment
from store.db import ResultsDB
from store.models import Interval, Run
from tests.support.tiny_experiment import tiny_tpcc_experiment

pytestmark = [pytest.mark.mysql, pytest.mark.slow]

RECORDED = (Path(__file__).resolve().parents[2] / "fixtures" / "tpcc"
            / "run-json-hist-w1-c2-r2-l4-i2-mariadb10.11.jsonl")


def _hostile(edit_line: int, edit) -> str:  # noqa: ANN001 - a small test helper
    """The recorded output with line ``edit_line`` (0-based) changed by ``edit``."""
    lines = RECORDED.read_text().splitlines()
    obj = json.loads(lines[edit_line])
    edit(obj)
    lines[edit_line] = json.dumps(obj, separators=(",", ":"))
    return "\n".join(lines) + "\n"


def _nan_count(obj: dict) -> None:
    obj["new_order"]["count"] = math.nan


def _negative(obj: dict) -> None:
    obj["new_order"]["count"] = -15000
    obj["hist"]["new_order"] = [[400, -15000]]


def _seq(obj: dict) -> None:
    obj["seq"] = 10**30


#: Per repetition: the hostile output, and what the run's error must say.
CASES = [
    (_hostile(2, _nan_count), "output line 3 breaks its JSON format (new_order.count: Input"
                              " should be a valid integer (got nan))"),
    (_hostile(1, _negative), "output line 2 breaks its JSON format (new_order.count: Input"
                             " should be greater than or equal to 0 (got -15000))"),
    (_hostile(1, _seq), "output line 2 breaks its JSON format (seq: Input should be less than"
                        " or equal to"),
]


def _stand_in(tmp_path: Path) -> Path:
    """The real driver, except that its n-th ``run`` prints ``output-n.jsonl`` and exits 0."""
    for n, (text, _) in enumerate(CASES):
        (tmp_path / f"output-{n}.jsonl").write_text(text)
    counter = tmp_path / "runs-so-far"
    counter.write_text("0")
    script = tmp_path / "tpcc-stand-in"
    script.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = run ]; then\n'
        f'  n=$(cat {counter}); echo $((n + 1)) > {counter}\n'
        f'  cat {tmp_path}/output-$n.jsonl; exit 0\n'
        "fi\n"
        f'exec {tpcc_binary()} "$@"\n')
    script.chmod(0o755)
    return script


def test_hostile_driver_lines_fail_their_runs_with_the_line_and_reason(
        tmp_path: Path, work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLUSHBENCH_TPCC_BIN", str(_stand_in(tmp_path)))
    path = tiny_tpcc_experiment(tmp_path, "hostile-json", repetitions=len(CASES))
    db = ResultsDB(tmp_path / "r.sqlite")
    outcome = run_experiment(path, db, work=work)
    assert (outcome.failed, outcome.done) == (len(CASES), 0)
    with db.session() as s:
        runs = list(s.scalars(select(Run).order_by(Run.order_index, Run.attempt)))
        negative = s.scalars(select(Interval).where(Interval.primary_count < 0)).all()
    assert [r.status for r in runs] == ["failed"] * len(CASES)  # never running, never done
    for run, (text, said) in zip(runs, CASES, strict=True):
        assert run.error is not None and said in run.error, run.error
        hostile_line = next(x for x in text.splitlines() if ":-15000" in x or "NaN" in x
                            or "1000000000000000000000000000000" in x)
        assert hostile_line[:60] in run.error  # the line itself, quoted
    assert not negative
