"""Each row against its own baseline: an experiment on two servers names one baseline per
server, and every ratio and verdict of a row uses its own server's
(analysis/reading/baselines.py).

Checked on a copy of the flash study's database, whose MySQL rows have MySQL's ``base`` and
whose XtraDB rows have XtraDB's ``ps-bigredo-75`` as their baselines once the experiment names
both; the expected ratios are computed here by hand from each run's window NOTPM.
"""

from __future__ import annotations

import html
import json
import math
import re
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from analysis.comparisons.compare import compare
from analysis.reading.baselines import baseline_note, baseline_of
from analysis.report.render import block_html
from analysis.report.sentences import summary
from core.errors import ConfigError
from core.experiment.cells import expand
from core.experiment.loading import load_experiment
from tests.support.recorded import copy_recorded

FLASH = "stability-2011-flash"
XTRADB_BASE = "ps-bigredo-75"


def _cells(*rows: tuple[int, bool, dict]) -> pd.DataFrame:
    return pd.DataFrame([{"cell_id": c, "is_baseline": b, "knobs": k,
                          "cell_label": json.dumps(k)} for c, b, k in rows])


def test_one_baseline_is_everyone_s() -> None:
    cells = _cells((1, True, {"server": "a", "dw": "on"}), (2, False, {"server": "b", "dw": "on"}))
    assert baseline_of(cells) == {1: 1, 2: 1}
    assert baseline_note(cells) is None


def test_each_server_s_rows_get_that_server_s_baseline() -> None:
    cells = _cells((1, True, {"server": "a", "dw": "on"}), (2, False, {"server": "a", "dw": "off"}),
                   (3, False, {"server": "b", "dw": "off"}), (4, True, {"server": "b", "dw": "on"}),
                   (5, False, {"server": "c", "dw": "on"}))
    assert baseline_of(cells) == {1: 1, 2: 1, 3: 4, 4: 4, 5: 1}  # c has none: the first
    note = baseline_note(cells)
    assert note is not None and note.startswith("Each row is compared with its own server's")
    assert "a: " in note and "b: " in note


@pytest.fixture(scope="module")
def flash(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The flash study's database with XtraDB's baseline named as the experiment file does."""
    db = copy_recorded(FLASH, tmp_path_factory.mktemp("baselines") / "flash.sqlite")
    conn = sqlite3.connect(db)
    try:
        (spec_text,) = conn.execute("SELECT spec FROM experiments WHERE name = ?",
                                    (FLASH,)).fetchone()
        spec = json.loads(spec_text)
        ps75 = next(i for i in spec["include"] if (i.get("reference") or {}).get("name")
                    == XTRADB_BASE)
        xtradb_base = {k: v for k, v in ps75.items()
                       if k not in ("reference", "repetitions", "variables") and v is not None}
        # The committed database may name both already: the first stays, XtraDB's is ours.
        first = spec["baseline"][0] if isinstance(spec["baseline"], list) else spec["baseline"]
        spec["baseline"] = [first, xtradb_base]
        conn.execute("UPDATE experiments SET spec = ? WHERE name = ?", (json.dumps(spec), FLASH))
        conn.execute("UPDATE cells SET is_baseline = 1 WHERE json_extract(knobs, '$.server') ="
                     " 'xtradb-5.5' AND json_extract(knobs, '$.log_file_size') IS NOT NULL AND"
                     " json_extract(knobs, '$.max_dirty_pages_pct') = 75 AND"
                     " json_extract(knobs, '$.flush_neighbor_pages') = 'area'")
        assert conn.total_changes >= 2
        conn.commit()
    finally:
        conn.close()
    return db


def _geo_ratio(rs: pd.DataFrame, cell: int, base: int) -> float:
    logs = {c: np.log(g["notpm"].to_numpy(float)) for c, g in rs.groupby("cell_id")}
    return math.exp(logs[cell].mean() - logs[base].mean())


def test_flash_rows_against_their_own_server_s_baseline(flash: Path) -> None:
    cmp = compare(flash, FLASH)
    cells = cmp.cells.set_index("cell_id")
    servers = {cid: (k or {}).get("server") for cid, k in cells["knobs"].items()}
    bases = cells.index[cells["is_baseline"]].to_list()
    assert len(bases) == 2
    xtradb_base = next(b for b in bases if servers[b] == "xtradb-5.5")
    mysql_base = next(b for b in bases if servers[b] == "mysql-5.5")
    assert cells.loc[xtradb_base, "verdict"] == "baseline"
    assert cells.loc[xtradb_base, "ratio"] == 1.0
    for cid, row in cells.iterrows():
        if cid in bases:
            continue
        own = xtradb_base if servers[cid] == "xtradb-5.5" else mysql_base
        assert row["baseline_id"] == own, row["cell_label"]
        assert row["baseline_label"] == cells.loc[own, "cell_label"]
    # ps-bigredo-60 against ps-bigredo-75 (4 vs 6 runs, 4 shared rounds): near the
    # geometric-mean ratio (the round model adjusts it for the rounds).
    rs = cmp.frames.run_summary
    rs = rs[rs["status"] == "done"]
    bigredo60 = next(c for c in cells.index if servers[c] == "xtradb-5.5"
                     and cells.loc[c, "knobs"].get("max_dirty_pages_pct") == 60
                     and cells.loc[c, "knobs"].get("io_capacity") == 20000)
    assert cells.loc[bigredo60, "ratio"] == pytest.approx(
        _geo_ratio(rs, bigredo60, xtradb_base), rel=0.03)
    assert "own server's baseline (mysql-5.5: " in cmp.cells.attrs["baselines_note"]


def test_the_summary_counts_rows_against_their_own_baselines(flash: Path) -> None:
    """The report's first list: the other server's baseline is a baseline, not a row with "no
    clear difference", and the best row's ratio names the baseline it is against."""
    cmp = compare(flash, FLASH)
    text = block_html(summary(cmp, {}))
    counts = re.search(r"Against their own baselines \(2\): (\d+) faster, (\d+) slower, "
                       r"(\d+) no clear difference(?:, (\d+) with too few)?", text)
    assert counts, text
    assert sum(int(n or 0) for n in counts.groups()) == len(cmp.cells) - 2
    best = cmp.ranking.iloc[0]
    assert not best["is_baseline"]
    own = cmp.cells.set_index("cell_id").loc[best["cell_id"], "baseline_label"]
    assert f"× its baseline {html.escape(str(own), quote=True)}," in text


def _experiment(tmp_path: Path, baseline: object) -> Path:
    data = yaml.safe_load((Path(__file__).resolve().parents[2] / "experiments"
                           / "quickstart.yaml").read_text())
    data["baseline"] = baseline
    path = tmp_path / "e.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_a_file_names_a_baseline_per_group(tmp_path: Path) -> None:
    path = _experiment(tmp_path, [{"doublewrite": "on", "max_dirty_pages_pct": 75},
                                  {"doublewrite": "off", "max_dirty_pages_pct": 75}])
    cells = expand(load_experiment(path), str(path))
    marked = [c.label for c in cells if c.is_baseline]
    assert marked == ["doublewrite=on max_dirty_pages_pct=75",
                      "doublewrite=off max_dirty_pages_pct=75"]


def test_a_baseline_names_an_include_row(tmp_path: Path) -> None:
    """A row no knob values can single out (it only lacks a raw variable another row sets) is
    the baseline by its name; names and knob values mix in a list."""
    data = yaml.safe_load((Path(__file__).resolve().parents[2] / "experiments"
                           / "quickstart.yaml").read_text())
    data.pop("matrix")
    data["include"] = [{"name": "plain", "doublewrite": "on"},
                       {"name": "purged", "doublewrite": "on",
                        "variables": {"innodb_purge_threads": 4}},
                       {"doublewrite": "off"}]
    for baseline, marked in (("plain", ["doublewrite=on"]),
                             (["purged", {"doublewrite": "off"}],
                              ["doublewrite=on var.innodb_purge_threads=4", "doublewrite=off"])):
        data["baseline"] = baseline
        path = tmp_path / "e.yaml"
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        cells = expand(load_experiment(path), str(path))
        assert [c.label for c in cells if c.is_baseline] == marked


@pytest.mark.parametrize(("baseline", "fragment"), [
    ([{"doublewrite": "on", "max_dirty_pages_pct": 75}, {"doublewrite": "on"}],
     "baseline[1]: baseline (doublewrite=on) matches 2 cells"),
    ([{"doublewrite": "on", "max_dirty_pages_pct": 75},
      {"doublewrite": "on", "max_dirty_pages_pct": 75}], "names a cell an earlier baseline"),
    ("base", "baseline: no include row is named 'base' (row names: none: give include rows"
     " `name: …`) — name a row of `include`, or give knob values"),
    ({"doublewrit": "on"}, "did you mean"),
])
def test_a_baseline_list_names_distinct_cells(tmp_path: Path, baseline: object,
                                              fragment: str) -> None:
    path = _experiment(tmp_path, baseline)
    with pytest.raises(ConfigError) as caught:
        expand(load_experiment(path), str(path))
    assert fragment in caught.value.render()
