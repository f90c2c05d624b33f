"""One metric vocabulary in what the CLI prints (issue 26): a sysbench experiment's
`compare`, `show` and cross-database `compare` never say NOTPM, in any case; a TPC-C
experiment's do (so the check can fail)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.cli_runner import CliRun
from tests.support.recorded import copy_recorded, recorded_pair

NOTPM = re.compile("notpm", re.IGNORECASE)


@pytest.fixture(scope="module")
def sysbench_dbs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return recorded_pair("allocators", tmp_path_factory)


def test_sysbench_output_never_says_notpm(sysbench_dbs: tuple[Path, Path],
                                          cli: CliRun) -> None:
    a, b = sysbench_dbs
    name = "allocators-example"
    outputs = {
        "compare": cli(["compare", name, "--db", str(a)]),
        "show": cli(["show", "1", "--db", str(a)]),
        "status": cli(["status", "--db", str(a)]),
        "compare across databases": cli(["compare", f"{name}@{a}", f"{name}@{b}"]),
    }
    for verb, (code, out, err) in outputs.items():
        assert code == 0, (verb, out + err)
        assert not NOTPM.search(out + err), f"{verb} says NOTPM: {NOTPM.findall(out)}"
    assert "TPS (95% CI)" in outputs["compare"][1]
    assert "TPS (95% CI)" in outputs["compare across databases"][1]


def test_tpcc_output_says_notpm(tmp_path: Path, cli: CliRun,
                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # headings on one line (at 80 "(95% CI)" wraps)
    db = copy_recorded("stability-2011", tmp_path / "study.sqlite")
    code, out, err = cli(["compare", "stability-2011", "--db", str(db)])
    assert code == 0, out + err
    assert "NOTPM (95% CI)" in out
