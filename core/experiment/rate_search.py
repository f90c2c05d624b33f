"""The highest rate under a target: ``workload.rate: {max_under: {...}}`` (docs/tpcc.md,
"The highest rate under a target").

A rate search measures one cell at a sequence of fixed rates, each *step* a normal run at one
rate, and answers with the highest rate the cell *held*: its window p99 (stalls and in-flight
waits counted, docs/statistics.md "Response time") at most the target, its achieved rate at
least 95 % of the step's rate, and its stall seconds at most the limit. Which rate is tried
next is a pure function of the steps already judged (:func:`next_rate`), so a search resumes
from its stored steps whoever runs it. Two strategies:

* ``step``: from ``start`` upwards by ``step`` while each step holds, the first failure ends
  it; when ``start`` itself fails, downwards by ``step`` until one holds (or the rate would
  reach 0). The answer is within one step of the true limit on a monotone curve.
* ``bisect: {low, high, resolution}``: ``low``, then ``high``, then the midpoint of the
  highest held rate and the lowest failed rate above it, until they are at most
  ``resolution`` apart.

A non-monotone curve (a rate held above one that failed) does not move the answer above the
failure: the answer is the highest rate held *below the lowest failure*, and
:attr:`SearchAnswer.non_monotone` names the rates that held above it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, model_validator

from core.units import parse_duration
from core.validation import KeyedValueError, StrictModel

#: The highest rate (NOTPM) a search may try: the Go driver's bound on --rate.
RATE_MAX_NOTPM = 10_000_000
#: A search never measures more steps than this (a typo'd step of 1 NOTPM is not a week's queue).
MAX_STEPS_LIMIT = 100

Rate = Annotated[float, Field(gt=0, le=RATE_MAX_NOTPM, allow_inf_nan=False)]


def _to_ms(value: Any) -> Any:
    """``200ms``, ``0.2s`` or a bare number (milliseconds) → milliseconds."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        try:
            return float(text)
        except ValueError:
            pass
        try:
            return parse_duration(text) * 1000.0
        except ValueError as exc:
            raise ValueError(f"{value!r} is not a latency — write e.g. `200ms` or `0.2s`"
                             f" ({exc})") from None
    return value


def _to_s(value: Any) -> Any:
    """``0``, ``5s`` or a bare number (seconds) → seconds."""
    if isinstance(value, str):
        try:
            return parse_duration(value)
        except ValueError as exc:
            raise ValueError(str(exc)) from None
    return value


class Bisection(StrictModel):
    """Bisection over ``[low, high]`` until the held and failed rates are ``resolution`` apart."""

    low: Rate
    high: Rate
    resolution: Rate

    @model_validator(mode="after")
    def _ordered(self) -> Bisection:
        if self.low >= self.high:
            raise KeyedValueError("`low` must be below `high`", "low")
        if self.resolution >= self.high - self.low:
            raise KeyedValueError("`resolution` must be smaller than `high` − `low`",
                                  "resolution")
        return self


class MaxUnder(StrictModel):
    """The target a search holds each step to, and how it picks its rates."""

    #: The window p99 each step must stay at or under (milliseconds; ``200ms``, ``0.2s``).
    p99: Annotated[float, BeforeValidator(_to_ms), Field(gt=0, allow_inf_nan=False)]
    #: The most stall seconds (window intervals completing nothing) a step may have.
    stall_s: Annotated[float, BeforeValidator(_to_s), Field(ge=0, allow_inf_nan=False)] = 0.0
    #: ``step`` strategy: the first rate and the distance between rates (NOTPM).
    start: Rate | None = None
    step: Rate | None = None
    #: ``bisect`` strategy (instead of ``start``/``step``).
    bisect: Bisection | None = None
    #: The most steps one cell's search measures.
    max_steps: Annotated[int, Field(ge=2, le=MAX_STEPS_LIMIT)] = 12

    @model_validator(mode="after")
    def _one_strategy(self) -> MaxUnder:
        stepping = self.start is not None or self.step is not None
        if stepping and self.bisect is not None:
            raise KeyedValueError("give either `start` and `step`, or `bisect: {low, high,"
                                  " resolution}` — not both", "bisect")
        if self.bisect is None and (self.start is None or self.step is None):
            missing = "start" if self.start is None else "step"
            raise KeyedValueError(
                f"`{missing}` is missing — a search needs `start` and `step` (NOTPM), e.g."
                " `{p99: 200ms, start: 1000, step: 500}`, or `bisect: {low, high, resolution}`",
                missing)
        return self

    @property
    def first_rate(self) -> float:
        """The rate of a search's first step."""
        return self.bisect.low if self.bisect is not None else float(self.start or 0)

    def target_text(self) -> str:
        """The target in words: ``p99 200 ms`` (with the stall limit when one is allowed)."""
        text = f"p99 {self.p99:g} ms"
        return text + (f", stalls ≤ {self.stall_s:g} s" if self.stall_s else "")


class RateSearch(StrictModel):
    """``workload.rate: {max_under: {...}}``: search the highest rate under a target."""

    max_under: MaxUnder


@dataclass(frozen=True)
class StepResult:
    """One measured step, judged: its rate, its figures and whether it held the target.

    ``p99_ms`` is the window p99 with stalls and in-flight waits counted (NaN: no figure);
    ``achieved_notpm`` the window's New-Orders a minute; ``stall_s`` its stall seconds.
    """

    rate: float
    p99_ms: float
    achieved_notpm: float
    stall_s: float
    run_id: int | None = None

    def failures(self, target: MaxUnder) -> list[str]:
        """Why the step did not hold ``target`` (empty: it held)."""
        out = []
        if not self.p99_ms <= target.p99:
            out.append("no p99" if math.isnan(self.p99_ms)
                       else f"p99 {self.p99_ms:,.0f} ms > {target.p99:g} ms")
        if not self.achieved_notpm >= HELD_SHARE * self.rate:
            out.append("no achieved rate recorded" if math.isnan(self.achieved_notpm)
                       else f"achieved {self.achieved_notpm:,.0f} NOTPM < {HELD_SHARE:.0%}"
                       f" of {self.rate:,.0f}")
        if not self.stall_s <= target.stall_s:
            out.append("no stall seconds" if math.isnan(self.stall_s)
                       else f"stalls {self.stall_s:g} s > {target.stall_s:g} s")
        return out

    def held(self, target: MaxUnder) -> bool:
        """Whether the step held the target (p99, achieved rate and stalls all within it)."""
        return not self.failures(target)


#: The share of its rate a step must achieve to hold it (the fixed-rate rule,
#: analysis/response/fixed_rate.py's HELD_SHARE).
HELD_SHARE = 0.95


def _bounds(target: MaxUnder, steps: list[StepResult]) -> tuple[float | None, float | None]:
    """The lowest failed rate, and the highest held rate below it (None: none)."""
    failed = [s.rate for s in steps if not s.held(target)]
    lowest_fail = min(failed) if failed else None
    held = [s.rate for s in steps if s.held(target)
            and (lowest_fail is None or s.rate < lowest_fail)]
    return (max(held) if held else None), lowest_fail


def next_rate(target: MaxUnder, steps: list[StepResult]) -> float | None:
    """The rate the search measures next, given its judged steps (any order); None when the
    search is over. A pure function: a resumed search decides from its stored steps."""
    if len(steps) >= target.max_steps:
        return None
    tried = {s.rate for s in steps}
    held, failed = _bounds(target, steps)
    if target.bisect is not None:
        b = target.bisect
        for first in (b.low, b.high):
            if first not in tried:
                return first if first == b.low or held is not None else None
        if held is None or failed is None or failed - held <= b.resolution:
            return None
        return _fresh((held + failed) / 2, tried)
    start, step = float(target.start or 0), float(target.step or 0)
    if not steps:
        return start
    if held is None:  # nothing held yet: down from the lowest failure
        nxt = (failed if failed is not None else start) - step
        return nxt if nxt > 0 and nxt not in tried else None
    if failed is None:  # everything held: up from the highest
        nxt = held + step
        return nxt if nxt <= RATE_MAX_NOTPM and nxt not in tried else None
    if failed - held <= step:
        return None
    # A gap wider than a step (a non-monotone start, or an edited step): close it upwards.
    return _fresh(held + step, tried)


def _fresh(rate: float, tried: set[float]) -> float | None:
    return None if rate in tried else rate


@dataclass(frozen=True)
class SearchAnswer:
    """A finished (or stopped) search: the highest rate held below the lowest failure, the
    step table, and the rates that held above a failure (a non-monotone curve)."""

    best: StepResult | None
    lowest_failure: StepResult | None
    steps: list[StepResult]
    non_monotone: list[float]
    finished: bool


def answer(target: MaxUnder, steps: list[StepResult]) -> SearchAnswer:
    """What the search found from its judged steps (by rate; see the module docstring)."""
    held, failed = _bounds(target, steps)
    by_rate = sorted(steps, key=lambda s: s.rate)
    best = next((s for s in reversed(by_rate) if s.rate == held and s.held(target)), None)
    low_fail = next((s for s in by_rate if s.rate == failed and not s.held(target)), None)
    odd = sorted({s.rate for s in steps
                  if failed is not None and s.rate > failed and s.held(target)})
    return SearchAnswer(best, low_fail, by_rate, odd, next_rate(target, steps) is None)


def answer_text(target: MaxUnder, found: SearchAnswer) -> str:
    """One sentence: ``highest rate under p99 200 ms: 2,500 NOTPM (held at 2,500: p99 140 ms;
    failed at 3,000: p99 410 ms)``, naming a non-monotone curve or an unfinished search."""
    head = f"highest rate under {target.target_text()}: "
    parts = []
    if found.best is not None:
        head += f"{found.best.rate:,.0f} NOTPM"
        parts.append(f"held at {found.best.rate:,.0f}: p99 {found.best.p99_ms:,.0f} ms")
    elif not found.steps:
        head += "no step measured yet"
    else:
        head += "none of the rates tried"
    if found.lowest_failure is not None:
        why = "; ".join(found.lowest_failure.failures(target))
        parts.append(f"failed at {found.lowest_failure.rate:,.0f}: {why}")
    text = head + (f" ({'; '.join(parts)})" if parts else "")
    if found.non_monotone:
        text += (" — not monotone: held again at "
                 + ", ".join(f"{r:,.0f}" for r in found.non_monotone)
                 + " above that failure, not counted")
    if not found.finished:
        n = len(found.steps)
        if n:
            text += f" — search not finished ({n} step{'s' if n != 1 else ''} so far)"
    elif found.best is not None and found.lowest_failure is None:
        text += " — no rate tried failed: the limit may be higher"
    return text
