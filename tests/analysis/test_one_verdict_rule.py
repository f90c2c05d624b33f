"""One comparison, one verdict, wherever it is shown: on a copy of the flash study's database
the report's throughput bars, ``flushbench compare``, its scorecard (``--reference``) and the
study README's scorecard (``analysis/studies/flash_tables.py``) all state what the one verdict rule
(``analysis.statistics.verdicts.design_verdict``) says."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from analysis.comparisons import scorecard
from analysis.comparisons.compare import compare
from analysis.figures import plots
from analysis.reading.window_cycles import WINDOW_DEPENDENT
from analysis.statistics.verdicts import FASTER, NO_DIFFERENCE, NOT_ENOUGH, SLOWER
from core.experiment.loading import load_experiment
from tests.support.cli_runner import CliRun
from tests.support.recorded import copy_recorded

ROOT = Path(__file__).resolve().parents[2]
EXPERIMENT = ROOT / "experiments" / "stability-2011-flash.yaml"
NAME = "stability-2011-flash"
VERDICTS = (FASTER, SLOWER, NO_DIFFERENCE, NOT_ENOUGH)


def _column(out: str, name: str) -> dict[str, str]:
    """Row id → the text of column ``name`` in compare's first table (wrapped cells joined)."""
    table = out[out.index("┏"):]
    header = [c.strip() for c in table.splitlines()[1].split("┃")[1:-1]]
    heads = [" ".join(parts) for parts in zip(*[[c.strip() for c in line.split("┃")[1:-1]]
                                                 for line in table.splitlines()[1:3]
                                                 if line.startswith("┃")], strict=True)]
    index = next(i for i, h in enumerate(heads or header) if name in h.split())
    rows: dict[str, list[str]] = {}
    current = None
    for line in table.splitlines():
        if line.startswith("└"):
            break
        if not line.startswith("│"):
            continue
        cells = [c.strip() for c in line.split("│")[1:-1]]
        if re.match(r"C\d+$", cells[0]):
            current = cells[0]
            rows[current] = []
        if current is not None and cells[index]:
            rows[current].append(cells[index])
    return {k: " ".join(v) for k, v in rows.items()}


@pytest.fixture(scope="module")
def flash(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_recorded(NAME, tmp_path_factory.mktemp("one-rule") / "flash.sqlite")


def test_bars_compare_and_scorecard_state_one_verdict(flash: Path, cli: CliRun) -> None:
    cmp = compare(flash, NAME)
    cells = cmp.cells.set_index("cell_id")
    expected = {int(c): v for c, v in cells["verdict"].items()}
    assert NOT_ENOUGH not in expected.values()  # a blocked design concludes
    # The report's bars: each non-baseline bar's text names the cell's verdict.
    fig = plots.notpm_bars(cmp.cells)
    # Bars are grouped under their baselines: read each bar's cell from the figure itself.
    bar_text = dict(zip(fig.data[0].meta["cells"], fig.data[0].text, strict=True))
    for cell_id, verdict in expected.items():
        if verdict != "baseline":
            assert bar_text[cell_id].endswith(f"· {verdict}"), (cell_id, bar_text[cell_id])
    # `flushbench compare`: the verdict column, row by row (C<position + 1>).
    code, out, err = cli(["compare", NAME, "--db", str(flash)])
    assert code == 0, err
    shown = _column(out, "verdict")
    by_id = {f"C{int(cells.loc[c, 'position']) + 1}": v for c, v in expected.items()}
    assert shown == by_id
    # The scorecard: each comparison's "our verdict" is the rule's verdict for that pair, and
    # `compare --reference` prints the same grades the table holds.
    spec = load_experiment(EXPERIMENT)
    table = scorecard.for_comparison(spec, cmp, flash)
    # A verdict that changes over the window starts says so, as compare's own table does.
    assert set(table["our_verdict"]) <= {*VERDICTS, WINDOW_DEPENDENT}
    code, out, err = cli(["compare", NAME, "--db", str(flash), "--reference", str(EXPERIMENT)])
    assert code == 0, err
    assert f"scorecard: {scorecard.headline(table)}" in " ".join(out.split())
    # A comparison against a row's own baseline is the compare table's verdict too.
    base_of = {int(c): int(b) for c, b in cells["baseline_id"].items()}
    rows = {r.name: r.cell_id for r in scorecard.match_rows(spec, cmp.cells)}
    for r in table.itertuples():
        a, b = rows[r.a], rows[r.b]
        if base_of[a] == b:
            assert r.our_verdict == expected[a], r.comparison


def test_the_readme_scorecard_is_the_rule_s(flash: Path) -> None:
    """The README's table is flash_tables.py's output (tests/analysis/test_flash_tables.py);
    here: that output's 'our verdict' column is the scorecard's on the same database."""
    done = subprocess.run([sys.executable, "-m", "analysis.studies.flash_tables", str(flash)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, check=True)
    section = done.stdout.split("## Scorecard\n\n", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|") for line in section.splitlines() if line.startswith("| R")]
    cmp = compare(flash, NAME)
    table = scorecard.for_comparison(cmp.frames.experiment["stored"].spec, cmp, flash)
    assert [r[7].strip() for r in rows] == list(table["our_verdict"])
    assert [re.split(r" \(|;", r[8].strip())[0] for r in rows] == list(table["verdict"])
