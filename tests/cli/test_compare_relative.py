"""``compare --format csv|markdown``: the relative table (analysis/comparisons/relative.py) of a
committed study — each row's throughput, response time, stability and bytes written over its own
baseline's — checked against ``compare``'s own ratios and recomputed from the figures it prints."""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

import pytest

from tests.support.recorded import recorded_copy


@pytest.fixture(scope="module")
def generations(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the committed generations study: one baseline per server."""
    return recorded_copy("generations", tmp_path_factory)


def _float(text: str) -> float:
    return float(text) if text else math.nan


def test_the_csv_ratios_are_compares_and_each_rows_figure_over_its_baselines(
        generations: Path, cli) -> None:  # noqa: ANN001
    from analysis.comparisons.compare import compare
    from analysis.reading.baselines import baseline_of

    code, out, err = cli(["compare", "generations", "--db", str(generations),
                          "--format", "csv"])
    assert code == 0, err
    table = list(csv.reader(io.StringIO(out)))
    head, rows = table[0], table[1:]
    assert head[:4] == ["row", "baseline", "NOTPM", "NOTPM ×"]
    assert "KiB written/New-Order" in head and "stability score" in head
    cmp = compare(f"sqlite:///{generations}", "generations")
    assert len(rows) == len(cmp.cells)
    by_name = {r[0]: dict(zip(head, r, strict=True)) for r in rows}
    # Every row's NOTPM ratio is the one compare's verdict judges.
    for (_, cell), row in zip(cmp.cells.sort_values("position").iterrows(), rows, strict=True):
        assert float(row[3]) == pytest.approx(float(cell["ratio"]), rel=1e-12)
    # Each row names its own server's baseline, and every baseline row reads 1.
    base_of = baseline_of(cmp.cells)
    assert len(set(base_of.values())) > 1  # one baseline per server: several groups
    bases = {r["baseline"] for r in by_name.values()}
    for name in bases:
        assert all(by_name[name][h] in ("1.0", "") for h in head if h.endswith("×"))
    # The other ratios recomputed from the printed figures: row ÷ its baseline's.
    checked = 0
    for row in by_name.values():
        base = by_name[row["baseline"]]
        for figure in ("p99 ms", "stability score", "KiB written/New-Order"):
            ratio_head = head[head.index(figure) + 1]
            value, base_value = _float(row[figure]), _float(base[figure])
            if row is base or not (base_value > 0):
                continue
            assert _float(row[ratio_head]) == pytest.approx(value / base_value, rel=1e-9)
            checked += 1
    # p99 and KiB written are known for every row (a stability score of 0 gives no ratio).
    assert checked >= 2 * (len(rows) - len(bases))


def test_the_markdown_starts_with_the_relative_table(generations: Path, cli) -> None:  # noqa: ANN001
    code, out, err = cli(["compare", "generations", "--db", str(generations),
                          "--format", "markdown"])
    assert code == 0, err
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| row | baseline |"))
    assert start < next(i for i, line in enumerate(lines) if "| configuration |" in line)
    body = [line for line in lines[start + 2:] if line.startswith("|")]
    base_rows = [line for line in body if line.split(" | ")[0][2:] == line.split(" | ")[1]]
    assert base_rows and all(" | 1.00 |" in line for line in base_rows)
    # The generations study has five servers: each one's baseline row against the first's.
    servers = lines.index("### Each server against mysql-5.5-defaults")
    table = lines[servers + 4:servers + 9]
    assert [line.split(" | ")[0][2:] for line in table] == [
        "mysql-5.5", "percona-5.5", "mariadb-10.2", "mariadb-debian", "mariadb-11.4"]
    assert " | reference | " in table[0]
    assert all(line.split(" | ")[3].split("×")[0].replace(".", "").isdigit()
               for line in table[1:])
    assert lines[servers + 9] == ""  # the table ends before its sentence
