"""Human units for durations ("30m", "10s") and sizes ("2000M", "8G").

Sizes follow the MySQL option-file convention: K/M/G/T are powers of 1024, and a bare
number is bytes. Durations accept ``s``, ``m``, ``h`` (and combinations such as ``1h30m``).
"""

from __future__ import annotations

import math
import re

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?\s*$", re.IGNORECASE)
_SIZE_FACTORS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}
_DURATION_PART_RE = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)", re.IGNORECASE)
_DURATION_FACTORS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_size(value: int | str) -> int:
    """Parse a size such as ``"2000M"``, ``"8G"``, ``"512K"`` or ``1048576`` into bytes.

    Raises
    ------
    ValueError
        With a message that shows accepted forms.
    """
    if isinstance(value, bool):
        raise ValueError(f"expected a size like 128M or 8G, got {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"size must not be negative, got {value}")
        return value
    if isinstance(value, float):
        if not math.isfinite(value) or not value.is_integer() or value < 0:
            raise ValueError(f"expected a size like 128M or 8G, got {value!r}")
        return int(value)
    m = _SIZE_RE.match(str(value))
    if not m:
        raise ValueError(f"expected a size like 128M, 2000M or 8G, got {value!r}")
    number, unit = m.groups()
    result = float(number) * _SIZE_FACTORS[unit.upper()]
    if not result.is_integer():
        raise ValueError(f"size {value!r} is not a whole number of bytes")
    return int(result)


def parse_duration(value: int | float | str) -> float:
    """Parse a duration such as ``"30m"``, ``"10s"``, ``"1h30m"`` or ``90`` into seconds."""
    if isinstance(value, bool):
        raise ValueError(f"expected a duration like 10s or 30m, got {value!r}")
    if isinstance(value, (int, float)):
        if not math.isfinite(value):
            raise ValueError(f"duration must be a finite number of seconds, got {value}")
        if value < 0:
            raise ValueError(f"duration must not be negative, got {value}")
        return float(value)
    text = str(value).strip()
    if re.fullmatch(r"\d+(?:\.\d+)?", text):
        return float(text)
    pos = 0
    total = 0.0
    for m in _DURATION_PART_RE.finditer(text):
        if m.start() != pos and text[pos : m.start()].strip():
            break
        total += float(m.group(1)) * _DURATION_FACTORS[m.group(2).lower()]
        pos = m.end()
    if pos == 0 or text[pos:].strip():
        raise ValueError(f"expected a duration like 10s, 30m or 1h30m, got {value!r}")
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
