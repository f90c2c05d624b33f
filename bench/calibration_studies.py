"""What the calibrations on the committed studies share: the command line naming the studies,
private copies of their databases, and the tables they print.

``bench/bound_calibration.py`` and ``bench/not_steady_calibration.py`` each take ``[NAME…]``
(default: every study they know) and print one Markdown table per study, judged on a copy of
its database (a committed database is never opened in place: ``tests/support/recorded.py``).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pandas as pd

from tests.support.recorded import copy_recorded


def chosen_studies(doc: str, studies: Sequence[str],
                   options: Callable[[argparse.ArgumentParser], None] | None = None,
                   ) -> tuple[argparse.Namespace, list[str]]:
    """The command line's options and the studies it names (``NAME…``; none: every one of
    ``studies``). An unknown name is a usage error listing the choices. ``options`` adds a
    script's own options to the parser; ``doc``'s first line describes the script."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("names", nargs="*", help=f"studies (default: {', '.join(studies)})")
    if options is not None:
        options(ap)
    args = ap.parse_args()
    unknown = sorted(set(args.names) - set(studies))
    if unknown:
        ap.error(f"unknown study {', '.join(unknown)}: choose from {', '.join(studies)}")
    return args, list(args.names or studies)


def study_copies(names: Sequence[str], folder: Path) -> Iterator[tuple[str, Path]]:
    """Each study's name and a private copy of its database in ``folder``, one at a time."""
    for name in names:
        yield name, copy_recorded(name, folder / f"{name}.sqlite")


def span(values: pd.Series, fmt: str, scale: float = 1.0) -> str:
    """``lo … hi`` of a row's runs, times ``scale`` (one value when they agree at this
    precision; ``–`` without any)."""
    values = pd.to_numeric(values, errors="coerce").dropna() * scale
    if values.empty:
        return "–"
    lo, hi = format(values.min(), fmt), format(values.max(), fmt)
    return lo if lo == hi else f"{lo} … {hi}"


def markdown(df: pd.DataFrame) -> str:
    """A Markdown table of text cells (the docs' format; no tabulate needed)."""
    lines = ["| " + " | ".join(df.columns) + " |", "|" + "---|" * len(df.columns)]
    lines += ["| " + " | ".join(str(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join(lines)
