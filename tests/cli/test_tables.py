"""The command's tables: one number formatter, one mark for a missing figure, one module that
builds every table (flushbench/cli/tables.py)."""

from __future__ import annotations

import ast
import io
import math
from pathlib import Path
from types import SimpleNamespace

import pandas as pd

from core.units import MISSING, format_number
from flushbench.cli import tables
from flushbench.cli.logs import LogReporter
from store.db import ResultsDB
from tests.support.cli_runner import CliRun

CLI_DIR = Path(tables.__file__).parent


def test_a_missing_figure_prints_as_one_mark() -> None:
    assert format_number(3168.4) == "3,168"
    assert format_number(0.1234, ".1%") == "12.3%"
    assert format_number(5, "+.2f") == "+5.00"
    for nothing in (None, math.nan, math.inf, -math.inf, pd.NA, pd.NaT, "n/a", object()):
        assert format_number(nothing) == MISSING == "–", nothing
    assert format_number(None, ".1f", missing="-") == "-"
    assert tables.number is format_number  # the tables' formatter is that one


def test_show_and_the_log_line_mark_a_run_without_figures_alike(recorded_flash: Path,
                                                               cli: CliRun) -> None:
    """Run 2 of the flash study was interrupted before its window: `show` and the worker's
    log line both print its missing figures as "–" (the log line printed "—")."""
    code, out, _ = cli(["show", "--db", str(recorded_flash), "2"])
    assert code == 0, out
    notpm_row = next(line for line in out.splitlines() if "NOTPM (window average)" in line)
    assert notpm_row.split("│")[2].strip() == MISSING
    # Its start and end to the second, with their zone (not pandas' microseconds and offset).
    moments = {line.split("│")[1].strip(): line.split("│")[2].strip()
               for line in out.splitlines() if line.count("│") >= 3}
    assert moments["started"] == "2026-11-24 05:32:19 UTC", moments
    assert moments["finished"] == "2026-11-24 05:32:20 UTC", moments
    stream = io.StringIO()
    with LogReporter(ResultsDB(recorded_flash, create=False), None, stream=stream) as reporter:
        reporter.run_started(1, 1, SimpleNamespace(label="baseline"), 1, 2)
        reporter.run_finished(2, "done", None)
    line = stream.getvalue().splitlines()[-1]
    assert f"NOTPM {MISSING} (window mean), stability {MISSING} (CV {MISSING} %)" in line, line
    assert "—" not in line


def test_every_table_of_the_command_is_built_in_one_module() -> None:
    """No verb module builds a rich Table (the live panel's layout grid, ``Table.grid``, is
    not a table of figures) or formats a figure with a formatter of its own."""
    builders, formatters = [], []
    for path in sorted(CLI_DIR.glob("*.py")):
        if path.name == "tables.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id == "Table"):
                builders.append(f"{path.name}:{node.lineno} Table(...)")
            if isinstance(node, ast.FunctionDef) and node.name in ("_f", "_fmt", "_num", "_n"):
                formatters.append(f"{path.name}:{node.lineno} def {node.name}")
    assert builders == [] and formatters == []
