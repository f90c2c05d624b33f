"""The one parser of numbers with units: sizes, durations, counts — and their sane ranges.

Sizes follow the MySQL option-file convention: ``K``/``M``/``G``/``T`` are powers of 1024
(``KiB``… say the same explicitly), and a bare number is bytes. ``KB``/``MB``/``GB``/``TB`` are
refused: disk and network specs use them for powers of 1000, my.cnf for powers of 1024, and
reading one as the other silently is a 5–10 % error (docs/architecture.md, "Units").

Durations accept ``ms``, ``s``, ``m``, ``h``, ``d``, each at most once and largest first
(``1h30m``, ``1h 30m``); ``1m1m1m`` or ``30m1h`` are refused as typos. Counts (IOPS) accept a
``k`` suffix for 1000. :func:`in_range` is the one range check with the reason for a range.
Every message quotes at most a bounded prefix of the value (:func:`core.errors.quote`).
:func:`format_number` is the one way a figure is printed in a table, a report or a log line.
"""

from __future__ import annotations

import math
import re
from typing import Any

from core.errors import quote

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(iB|B)?\s*$", re.IGNORECASE)
_SIZE_FACTORS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}
_DURATION_PART_RE = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)", re.IGNORECASE)
_DURATION_FACTORS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}
#: Largest first: a duration names each unit at most once, in this order.
_DURATION_ORDER = ("d", "h", "m", "s", "ms")
_COUNT_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kK]?)\s*$")
#: Longer number texts are no human's number (and int() of them is slow).
_MAX_DIGITS = 30


def parse_size(value: int | str) -> int:
    """Parse a size such as ``"2000M"``, ``"8G"``, ``"512K"``, ``"1GiB"`` or ``1048576`` (bytes).

    Raises
    ------
    ValueError
        With a message that shows accepted forms; ``80MB`` is refused as ambiguous.
    """
    if isinstance(value, bool):
        raise ValueError(f"expected a size like 128M or 8G, got {quote(value)}")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"size must not be negative, got {quote(value)}")
        return value
    if isinstance(value, float):
        if not math.isfinite(value) or not value.is_integer() or value < 0:
            raise ValueError(f"expected a size like 128M or 8G, got {quote(value)}")
        return int(value)
    text = str(value)
    m = _SIZE_RE.match(text) if len(text) <= _MAX_DIGITS else None
    if not m:
        raise ValueError(f"expected a size like 128M, 2000M or 8G, got {quote(value)}")
    number, unit, suffix = m.groups()
    if suffix is not None and suffix.upper() == "B" and unit:
        raise ValueError(
            f"{quote(value)} is ambiguous: {unit.upper()}B means powers of 1000 on disk specs"
            f" and of 1024 in my.cnf — write {number}{unit.upper()} or {number}{unit.upper()}iB"
            " (1024-based, as my.cnf), or the number of bytes")
    result = float(number) * _SIZE_FACTORS[unit.upper()]
    if not result.is_integer():
        raise ValueError(f"size {quote(value)} is not a whole number of bytes")
    return int(result)


def parse_count(value: int | float | str, what: str = "a count") -> int:
    """Parse a whole count such as ``3000``, ``"3000"``, ``"3k"`` or ``"1.5k"`` (k = 1000).

    Raises
    ------
    ValueError
        If the value is not a whole number >= 0 in one of those forms.
    """
    if isinstance(value, bool):
        raise ValueError(f"expected {what} like 3000 or 3k, got {quote(value)}")
    if isinstance(value, int):
        number = float(value) if abs(value) < 10**_MAX_DIGITS else math.inf
    elif isinstance(value, float):
        number = value
    else:
        text = str(value)
        m = _COUNT_RE.match(text) if len(text) <= _MAX_DIGITS else None
        if not m:
            raise ValueError(f"expected {what} like 3000 or 3k, got {quote(value)}")
        number = float(m.group(1)) * (1000 if m.group(2) else 1)
    if not math.isfinite(number) or not number.is_integer() or number < 0:
        raise ValueError(f"{what} must be a whole number, got {quote(value)}")
    return int(number)


def in_range(value: float, low: float, high: float, *, what: str, show: str = "{:,.0f}",
             why: str = "") -> float:
    """``value`` if ``low <= value <= high``; otherwise a ValueError with the range and why.

    ``show`` formats the bounds (e.g. with :func:`format_size` for bytes); ``why`` says where
    the range comes from, so the user can judge the fix.
    """
    if low <= value <= high:
        return value
    fmt = show.format if isinstance(show, str) else show
    side = "below" if value < low else "above"
    text = (f"{what} {fmt(value)} is {side} the sane range {fmt(low)}–{fmt(high)}"
            + (f": {why}" if why else ""))
    raise ValueError(text)


def parse_duration(value: int | float | str) -> float:
    """Parse a duration such as ``"30m"``, ``"10s"``, ``"1h30m"`` or ``90`` into seconds.

    Each unit appears at most once, largest first: ``1m1m1m`` and ``30m1h`` are refused.
    """
    if isinstance(value, bool):
        raise ValueError(f"expected a duration like 10s or 30m, got {quote(value)}")
    if isinstance(value, (int, float)):
        if not math.isfinite(value):
            raise ValueError(f"duration must be a finite number of seconds, got {quote(value)}")
        if value < 0:
            raise ValueError(f"duration must not be negative, got {quote(value)}")
        return float(value)
    text = str(value).strip()
    if len(text) > 3 * _MAX_DIGITS:
        raise ValueError(f"expected a duration like 10s, 30m or 1h30m, got {quote(value)}")
    if re.fullmatch(r"\d+(?:\.\d+)?", text):
        return float(text)
    pos = 0
    total = 0.0
    last = -1
    for m in _DURATION_PART_RE.finditer(text):
        if m.start() != pos and text[pos : m.start()].strip():
            break
        rank = _DURATION_ORDER.index(m.group(2).lower())
        if rank <= last:
            raise ValueError(f"duration {quote(value)} repeats a unit or has them out of order"
                             " — write each unit once, largest first (e.g. 1h30m)")
        last = rank
        total += float(m.group(1)) * _DURATION_FACTORS[m.group(2).lower()]
        pos = m.end()
    if pos == 0 or text[pos:].strip():
        raise ValueError(f"expected a duration like 10s, 30m or 1h30m, got {quote(value)}")
    return total


def format_size(n_bytes: float) -> str:
    """Format bytes the way my.cnf would take them, in the largest exact unit (``2000M``)."""
    n = int(n_bytes)
    for unit in ("T", "G", "M", "K"):
        factor = _SIZE_FACTORS[unit]
        if n >= factor and n % factor == 0:
            return f"{n // factor}{unit}"
    return str(n)


def format_duration(seconds: float) -> str:
    """Format seconds as ``1h02m``, ``5m30s`` or ``12s`` for progress displays and plans."""
    s = int(round(seconds))
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    if h:
        return f"{h}h{m:02d}m"
    if m:
        return f"{m}m{sec:02d}s" if sec else f"{m}m"
    return f"{sec}s"


#: What a table shows where a figure is missing (None, NaN, an infinity, not a number).
MISSING = "–"


def format_number(value: Any, spec: str = ",.0f", missing: str = MISSING) -> str:
    """A figure as ``format(value, spec)`` (``3,168``), or ``missing`` ("–") where there is
    none: None, NaN, an infinity, or anything ``float()`` refuses (pandas' NA, a text).

    The one number formatter of the command's tables, its log lines and the HTML reports, so
    a figure the run has not got reads the same everywhere.
    """
    try:
        number = float(value)
    except (TypeError, ValueError):
        return missing
    return format(number, spec) if math.isfinite(number) else missing
