"""Host pauses: the wall clock's lead over the monotonic clock, and the run warning it makes."""

from __future__ import annotations

import pytest

from runner.host import clock


def test_no_jump_without_a_pause() -> None:
    watch = clock.ClockWatch()
    assert abs(watch.jump_s()) < clock.PAUSE_WARN_S
    assert clock.pause_warning(watch.jump_s()) is None


def test_a_pause_is_the_wall_clock_gaining_on_the_monotonic_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Simulated: the guest was frozen 65 s — monotonic time stood still, wall time did not."""
    wall, mono = [1_000_000.0], [500.0]
    monkeypatch.setattr(clock.time, "time", lambda: wall[0])
    monkeypatch.setattr(clock.time, "monotonic", lambda: mono[0])
    watch = clock.ClockWatch()
    wall[0] += 110.0  # a 110 s run by the wall clock…
    mono[0] += 45.0   # …of which the guest ran 45 s
    assert watch.jump_s() == pytest.approx(65.0)
    warning = clock.pause_warning(watch.jump_s())
    assert warning is not None and warning.startswith("host paused: the wall clock moved 65 s")


@pytest.mark.parametrize(("jump", "expected"), [
    (1.9, None),
    (-1.9, None),
    (2.0, "host paused"),
    (-5.0, "host clock stepped back 5 s"),
])
def test_pause_warning_threshold(jump: float, expected: str | None) -> None:
    warning = clock.pause_warning(jump)
    if expected is None:
        assert warning is None
    else:
        assert warning is not None and warning.startswith(expected)
