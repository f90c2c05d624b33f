"""Human units: sizes follow my.cnf (powers of 1024), durations accept s/m/h combinations."""

from __future__ import annotations

import pytest

from core.units import format_duration, format_size, parse_duration, parse_size


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2000M", 2000 * 1024**2),
        ("8G", 8 * 1024**3),
        ("512K", 512 * 1024),
        ("1T", 1024**4),
        ("128MiB", 128 * 1024**2),
        ("1GiB", 1024**3),
        ("1.5G", 3 * 1024**3 // 2),
        (1048576, 1048576),
        ("1048576", 1048576),
        (" 16m ", 16 * 1024**2),
    ],
)
def test_parse_size(text, expected: int) -> None:
    assert parse_size(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("2XB", "expected a size like 128M"),
        ("-5", "expected a size like"),
        (-5, "must not be negative"),
        (True, "expected a size like"),
        ("0.3K", "is not a whole number of bytes"),
        ("128MB", "ambiguous"),  # decimal on disk specs, 1024-based in my.cnf: refused
        ("1gb", "write 1G or 1GiB"),
    ],
)
def test_parse_size_rejects(text, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_size(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("30m", 1800.0),
        ("10s", 10.0),
        ("1h30m", 5400.0),
        ("1h 30m", 5400.0),
        ("250ms", 0.25),
        (90, 90.0),
        ("90", 90.0),
        (1.5, 1.5),
        ("2d", 172800.0),
    ],
)
def test_parse_duration(text, expected: float) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["10 parsecs", "m30", "30x", "", "1h and 5m", True, "9" * 200])
def test_parse_duration_rejects(text) -> None:
    with pytest.raises(ValueError, match="expected a duration like 10s"):
        parse_duration(text)


@pytest.mark.parametrize("text", ["1m1m1m", "30m1h", "5s5s", "1ms1s"])
def test_parse_duration_refuses_repeated_units(text) -> None:
    with pytest.raises(ValueError, match="repeats a unit or has them out of order"):
        parse_duration(text)


def test_negative_duration() -> None:
    with pytest.raises(ValueError, match="must not be negative"):
        parse_duration(-1)


@pytest.mark.parametrize(
    ("n", "text"),
    [(2000 * 1024**2, "2000M"), (8 * 1024**3, "8G"), (1536, "1536"), (1024**4, "1T"),
     (1024 + 512 * 1024, "513K"), (0, "0")],
)
def test_format_size_is_exact(n: int, text: str) -> None:
    assert format_size(n) == text
    assert parse_size(text) == n


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(12, "12s"), (60, "1m"), (330, "5m30s"), (3720, "1h02m"), (44100, "12h15m"), (0, "0s")],
)
def test_format_duration(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text
