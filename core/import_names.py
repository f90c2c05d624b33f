"""The five import names flushbench installs, and whether anything else claims one of them.

flushbench's packages keep the repository's top-level folders as their import names
(``core``, ``runner``, ``analysis``, ``store``, ``flushbench``): the layout users know, the
names every notebook and doc imports. Such generic names are unambiguous only inside
flushbench's own environment (``scripts/setup.sh`` makes ``.venv``; the notebooks run in its
kernel). This module says, in one sentence per name, when that does not hold: another
distribution installed beside flushbench ships one of these names, or a folder earlier on
``sys.path`` shadows it. ``flushbench doctor`` shows the answer as a row.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from pathlib import Path

#: The top-level import names flushbench's wheel installs (pyproject's wheel packages).
IMPORT_NAMES = ("core", "flushbench", "runner", "analysis", "store")

#: The folder that holds all five packages: this module lives in ``<root>/core/``.
ROOT = Path(__file__).resolve().parents[1]

#: The fix every clash sentence ends with.
FIX = ("install flushbench in its own environment (`bash scripts/setup.sh` makes .venv) and run "
       "notebooks in that kernel, or remove the other package from this environment")


def _other_distributions(name: str) -> list[str]:
    """Distributions other than flushbench that say they install the import name ``name``."""
    owners = importlib.metadata.packages_distributions().get(name, [])
    return sorted({owner for owner in owners if owner.lower() != "flushbench"})


def _resolved_elsewhere(name: str) -> Path | None:
    """Where ``import name`` would load from, when that is not this flushbench's folder."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    locations = [Path(p).resolve() for p in (spec.submodule_search_locations or [])]
    if not locations and spec.origin:
        locations = [Path(spec.origin).resolve().parent]
    ours = (ROOT / name).resolve()
    if any(location == ours for location in locations):
        return None
    return locations[0] if locations else None


def clashes() -> list[str]:
    """One sentence per flushbench import name that is not flushbench's alone here.

    A name clashes when another installed distribution declares it (its ``top_level.txt`` or
    RECORD), or when ``import name`` would load a folder other than this checkout's. An empty
    list means all five names are flushbench's.
    """
    found = []
    for name in IMPORT_NAMES:
        others = _other_distributions(name)
        if others:
            found.append(f"the import name {name!r} is also installed by "
                         f"{', '.join(others)}: {FIX}")
            continue
        elsewhere = _resolved_elsewhere(name)
        if elsewhere is not None:
            found.append(f"`import {name}` loads {elsewhere}, not flushbench's {ROOT / name}: "
                         f"a folder earlier on sys.path shadows it; {FIX}")
    return found
