"""A report removes the PNGs an earlier report wrote to its folder and did not draw again — and
never a file it did not write itself."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from analysis.figure_folder import MANIFEST, replace_figures


def _touch(folder: Path, *names: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / name).write_bytes(b"png")


def test_a_later_report_with_fewer_figures_leaves_none_of_the_earlier_ones(
        tmp_path: Path) -> None:
    figures = tmp_path / "figures"
    first = ["01-notpm.png", "02-stability.png", "03-throughput-cell1.png"]
    _touch(figures, *first)
    assert replace_figures(figures, first) == []
    second = ["01-notpm.png", "02-stability.png"]
    _touch(figures, *second)
    assert replace_figures(figures, second) == ["03-throughput-cell1.png"]
    assert sorted(p.name for p in figures.iterdir()) == sorted([*second, MANIFEST])
    assert json.loads((figures / MANIFEST).read_text()) == second


def test_files_the_report_never_wrote_stay(tmp_path: Path) -> None:
    """A user's PNG, a PNG from before the manifest existed, a note: none is touched."""
    figures = tmp_path / "figures"
    _touch(figures, "my-annotated.png", "05-old.png", "notes.txt")
    replace_figures(figures, ["01-notpm.png"])
    replace_figures(figures, ["01-notpm.png", "02-stability.png"])
    replace_figures(figures, [])
    assert {"my-annotated.png", "05-old.png", "notes.txt"} <= {p.name for p in figures.iterdir()}


@pytest.mark.parametrize("listed", [
    ["../outside.png"], ["/etc/passwd"], ["sub/01-x.png"], [".."], ["01-x.txt"], [3, None],
    "01-x.png",
], ids=["parent", "absolute", "subfolder", "dotdot", "not-a-png", "not-text", "not-a-list"])
def test_a_tampered_manifest_removes_nothing_outside_the_figures(tmp_path: Path,
                                                                listed: object) -> None:
    figures = tmp_path / "report" / "figures"
    _touch(figures)
    outside = tmp_path / "report" / "outside.png"
    outside.write_bytes(b"keep")
    (figures / "sub").mkdir()
    _touch(figures / "sub", "01-x.png")
    (figures / "01-x.txt").write_text("keep")
    (figures / MANIFEST).write_text(json.dumps(listed))
    assert replace_figures(figures, ["02-y.png"]) == []
    assert outside.read_bytes() == b"keep" and (figures / "sub" / "01-x.png").exists()
    assert (figures / "01-x.txt").exists()


def test_a_listed_name_that_is_now_a_link_or_a_folder_stays(tmp_path: Path) -> None:
    figures = tmp_path / "figures"
    target = tmp_path / "precious.png"
    target.write_bytes(b"keep")
    _touch(figures)
    os.symlink(target, figures / "01-notpm.png")
    (figures / "02-stability.png").mkdir()
    (figures / MANIFEST).write_text(json.dumps(["01-notpm.png", "02-stability.png"]))
    assert replace_figures(figures, []) == []
    assert target.read_bytes() == b"keep" and (figures / "02-stability.png").is_dir()


def test_an_unreadable_manifest_removes_nothing(tmp_path: Path) -> None:
    figures = tmp_path / "figures"
    _touch(figures, "01-notpm.png")
    (figures / MANIFEST).write_text("{not json")
    assert replace_figures(figures, []) == []
    assert (figures / "01-notpm.png").exists()


def test_a_failed_export_removes_nothing_and_remembers_both(tmp_path: Path) -> None:
    """A renderer that failed part-way: the earlier report's PNGs stay, and both lists are
    remembered, so the next complete report still removes what is stale."""
    figures = tmp_path / "figures"
    _touch(figures, "01-notpm.png", "02-stability.png", "03-extra.png")
    replace_figures(figures, ["01-notpm.png", "02-stability.png", "03-extra.png"])
    assert replace_figures(figures, ["01-notpm.png"], complete=False) == []
    assert (figures / "03-extra.png").exists()
    assert replace_figures(figures, ["01-notpm.png"]) == ["02-stability.png", "03-extra.png"]
