"""Kernel CPU lists (``0``, ``0-1``, ``1,3``): parsed and written back in the compact form.

Pure text, so the experiment model can check ``cpus:`` when a file is validated; pinning a
process to the CPUs is :mod:`runner.host.cpus`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

from core.errors import quote

_RANGE_RE = re.compile(r"^(\d{1,12})(?:-(\d{1,12}))?$")
#: The kernel's largest CONFIG_NR_CPUS: no CPU number is higher (a cap before expanding).
MAX_CPUS = 8192
#: "0-8191" written out CPU by CPU is under 40,000 characters.
MAX_CPU_LIST_CHARS = 40_000


def parse_cpu_list(text: str | int) -> frozenset[int]:
    """Parse a kernel CPU list: ``0``, ``0-1``, ``1,3``, ``0-3,8``.

    Raises
    ------
    ValueError
        On an empty list, a malformed item or a reversed range.
    """
    if isinstance(text, bool):
        raise ValueError(f"expected a CPU list like 0-1 or 1,3, got {quote(text)}")
    text = str(text).strip()
    if len(text) > MAX_CPU_LIST_CHARS:
        raise ValueError(f"a CPU list of {len(text):,} characters is no CPU list, got"
                         f" {quote(text)}")
    cpus: set[int] = set()
    for item in text.split(","):
        m = _RANGE_RE.match(item.strip())
        if not m:
            raise ValueError(f"expected a CPU list like 0, 0-1 or 1,3, got {quote(text)}")
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) is not None else lo
        if hi < lo:
            raise ValueError(f"CPU range {quote(item.strip())} is reversed in {quote(text)}")
        # Checked before the range is built: "0-99999999999" must not fill the memory.
        if hi >= MAX_CPUS:
            raise ValueError(f"CPU {hi} does not exist: Linux numbers at most {MAX_CPUS:,} CPUs"
                             f" (0–{MAX_CPUS - 1}); this host has {os.cpu_count()}")
        cpus.update(range(lo, hi + 1))
    return frozenset(cpus)


def format_cpu_list(cpus: Iterable[int]) -> str:
    """The kernel's compact form: ``{0, 1, 3}`` -> ``0-1,3``."""
    ordered = sorted(set(cpus))
    parts: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(parts)
