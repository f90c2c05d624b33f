"""One metric vocabulary: a sysbench experiment's report folder (HTML, figure files and ids)
and its exports name TPS/QPS, never NOTPM — in any case, anywhere."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli_runner import CliRun
from tests.support.synthetic_store import SynthCell, build_store

pytestmark = pytest.mark.slow  # renders every PNG with kaleido


@pytest.fixture(scope="module")
def sysbench_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("sysbench") / "r.sqlite"
    cells = [SynthCell(knobs={"var.innodb_purge_threads": n, "doublewrite": dw}, notpm=30000)
             for n in (1, 4) for dw in (True, False)]
    build_store(path, cells, name="sb", repetitions=2, warmup=10, duration=60, n_counters=40,
                driver="sysbench")
    return path


def _mentions_notpm(folder: Path) -> list[str]:
    found = []
    for path in sorted(folder.rglob("*")):
        if "notpm" in path.name.lower():
            found.append(f"file name {path.name}")
        elif path.is_file() and b"notpm" in path.read_bytes().lower():
            found.append(f"inside {path.name}")
    return found


def test_sysbench_report_and_exports_never_say_notpm(sysbench_db: Path, tmp_path: Path,
                                                    cli: CliRun) -> None:
    out = tmp_path / "report"
    code, _, err = cli(["report", "sb", "--db", str(sysbench_db), "-o", str(out)])
    assert code == 0, err
    assert list(out.rglob("*.png")), "the report wrote no figure files"
    assert (out / "figures").exists() or list(out.glob("*.png"))
    exports = tmp_path / "exports"
    exports.mkdir()
    for what in ("runs", "intervals", "samples"):
        for fmt in ("csv", "parquet"):
            code, _, err = cli(["export", "sb", "--db", str(sysbench_db), "--what", what,
                                "--format", fmt, "-o", str(exports / f"{what}.{fmt}")])
            assert code == 0, err
    assert (exports / "runs.csv").read_text().splitlines()[0].count("tps") >= 1
    assert _mentions_notpm(out) == [] and _mentions_notpm(exports) == []
