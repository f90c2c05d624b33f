"""The two-axis figures of one run (the 2011 study's second graph, flushing activity), on
hand-made samples: which series sits on which axis, and the limit lines on the right one."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.figures import plots


def _samples(n: int = 12) -> pd.DataFrame:
    t = np.arange(n) * 10.0
    return pd.DataFrame({
        "run_id": 1, "seq": np.arange(n), "t": t, "missed": False,
        "checkpoint_age_mb": np.linspace(10, 60, n), "max_checkpoint_age_mb": 64.0,
        "dirty_pct": np.linspace(20, 74, n), "max_dirty_pages_pct": 75.0,
        "pages_flushed_per_s": np.full(n, 900.0), "dblwr_pages_per_s": np.full(n, 880.0),
        "log_mb_per_s": np.full(n, 1.8),
    })


def test_checkpoint_age_left_dirty_pages_right() -> None:
    fig = plots.checkpoint_dirty(_samples(), window=(30.0, 110.0))
    by_name = {tr.name: tr for tr in fig.data}
    assert by_name["checkpoint age (MiB)"].yaxis in (None, "y")
    assert by_name["dirty pages (%)"].yaxis == "y2"
    assert fig.layout.yaxis2.overlaying == "y" and fig.layout.yaxis2.side == "right"
    assert tuple(fig.layout.yaxis2.range) == (0, 100)
    # The max checkpoint age bounds the left axis; innodb_max_dirty_pages_pct is drawn on y2.
    assert fig.layout.yaxis.range[1] >= 64.0
    lines = {(s.yref or "y", round(s.y0, 3)) for s in fig.layout.shapes if s.type == "line"}
    assert ("y2", 75.0) in lines and ("y", 64.0) in lines and ("y", 56.0) in lines
    assert "checkpoint age" in fig.layout.yaxis.title.text
    assert "dirty pages" in fig.layout.yaxis2.title.text


def test_flushing_puts_redo_on_the_right_axis() -> None:
    fig = plots.flushing(_samples())
    by_name = {tr.name: tr for tr in fig.data}
    assert by_name["pages flushed/s"].yaxis in (None, "y")
    assert by_name["doublewrite pages/s"].yaxis in (None, "y")
    assert by_name["redo written (MiB/s)"].yaxis == "y2"
    assert fig.layout.yaxis2.title.text == "redo MiB/s"
    no_dblwr = _samples().assign(dblwr_pages_per_s=0.0)
    assert "doublewrite pages/s" not in {tr.name for tr in plots.flushing(no_dblwr).data}
