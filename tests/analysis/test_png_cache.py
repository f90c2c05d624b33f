"""The PNG cache: a figure drawn once at a size is not drawn again; a changed figure, size or
switch is; a full or broken cache never stops a PNG. A stand-in scope counts the drawings
(Chromium itself is exercised by the report tests)."""

from __future__ import annotations

import os
from pathlib import Path

import plotly.graph_objects as go
import pytest

from analysis.figures import png_cache, png_export
from analysis.figures.png_export import PngExporter

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 64


class CountingScope:
    """Stands in for kaleido's scope: returns a fixed PNG and counts what it drew."""

    drawn: list[tuple[str, int, int]] = []

    def transform(self, figure: dict, *, format: str, width: int, height: int,  # noqa: A002
                  scale: int) -> bytes:
        CountingScope.drawn.append((figure["layout"]["title"]["text"], width, height))
        return PNG + figure["layout"]["title"]["text"].encode()


@pytest.fixture
def scope(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> type[CountingScope]:
    monkeypatch.setenv("FLUSHBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(png_export, "_new_scope", CountingScope)
    monkeypatch.setattr(png_export, "_close_scope", lambda scope: None)
    CountingScope.drawn = []
    return CountingScope


def _export(tmp_path: Path, figures: list[tuple[str, int]]) -> list[bytes]:
    """Draw each (title, width) into its own file; return the files' bytes."""
    paths = []
    with PngExporter(renderers=1) as exporter:
        for i, (title, width) in enumerate(figures):
            fig = go.Figure(go.Scatter(x=[1, 2, 3], y=[3, 1, 2]), layout={"title": title})
            path = tmp_path / "out" / f"{i}.png"
            exporter.submit(fig, path, width=width, height=400)
            paths.append(path)
    assert exporter.error is None, exporter.error
    return [p.read_bytes() for p in paths]


def test_a_figure_is_drawn_once(scope: type[CountingScope], tmp_path: Path) -> None:
    first = _export(tmp_path, [("a", 800), ("b", 800)])
    assert scope.drawn == [("a", 800, 400), ("b", 800, 400)]
    again = _export(tmp_path, [("a", 800), ("b", 800)])
    assert again == first and len(scope.drawn) == 2  # both from the cache
    _export(tmp_path, [("a", 900), ("a changed", 800)])  # another size, another figure
    assert scope.drawn[2:] == [("a", 900, 400), ("a changed", 800, 400)]


def test_turned_off_draws_every_time_and_stores_nothing(
        scope: type[CountingScope], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLUSHBENCH_ANALYSIS_CACHE", "0")
    _export(tmp_path, [("a", 800)])
    _export(tmp_path, [("a", 800)])
    assert len(scope.drawn) == 2 and not png_cache.folder().exists()


def test_an_unusable_cache_still_draws(scope: type[CountingScope], tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "file").write_text("not a folder")
    monkeypatch.setenv("FLUSHBENCH_CACHE_DIR", str(tmp_path / "file"))
    assert _export(tmp_path, [("a", 800)]) == [PNG + b"a"]
    # A stored file that is not a PNG (cut short, overwritten) is drawn again.
    monkeypatch.setenv("FLUSHBENCH_CACHE_DIR", str(tmp_path / "cache"))
    _export(tmp_path, [("b", 800)])
    (stored,) = png_cache.folder().glob("*/*.png")
    stored.write_bytes(b"junk")
    assert _export(tmp_path, [("b", 800)]) == [PNG + b"b"]
    assert [d[0] for d in scope.drawn] == ["a", "b", "b"]


def test_prune_keeps_the_most_recently_used(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLUSHBENCH_CACHE_DIR", str(tmp_path))
    keys = [png_cache.key({"layout": {"title": str(i)}}, 10, 10) for i in range(4)]
    for age, k in enumerate(keys):
        png_cache.put(k, PNG + b"x" * 1000)
        path = png_cache.folder() / k[:2] / f"{k}.png"
        os.utime(path, (1_000_000 + age, 1_000_000 + age))
    assert png_cache.get(keys[0]) is not None  # used now: the newest
    png_cache.prune(max_bytes=2 * (len(PNG) + 1000))
    assert png_cache.get(keys[0]) is not None and png_cache.get(keys[3]) is not None
    assert png_cache.get(keys[1]) is None and png_cache.get(keys[2]) is None
