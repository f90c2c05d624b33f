"""The two hashes of an experiment: what each run measures, and the whole validated file."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from core.experiment.spec import ExperimentSpec

#: Keys of the experiment that do not change what a single run measures.
_PLAN_ONLY_KEYS = (
    "description",
    "hosts",
    "placement",
    "matrix",
    "exclude",
    "include",
    "baseline",
    "repetitions",
    "baseline_repetitions",
    "order",
    "reference",
    "disturbed",
)
#: Keys of sections that do not change what a single run measures: the start jitter is a
#: random draw per run, like the run order (each run records its own offset).
_PLAN_ONLY_SUBKEYS = (("pre_run", "start_jitter"), ("window", "cycles"))


def measurement_hash(exp: ExperimentSpec, files: Mapping[str, Any] | None = None) -> str:
    """Hash of the parts of an experiment that shape each run's measurement.

    Two files that differ only in the matrix, repetitions or order share it: their runs are
    comparable, and re-queuing an edited matrix reuses the finished cells. ``files`` (the base
    config's text and the server profile, as queued) count too: an edited base config is a
    different measurement.
    """
    data = exp.model_dump(mode="json")
    for key in _PLAN_ONLY_KEYS:
        data.pop(key, None)
    for section, key in _PLAN_ONLY_SUBKEYS:
        data.get(section, {}).pop(key, None)
    if data.get("window", {}).get("max_start") is None:
        # Added after experiments were stored: unset, it must not change their hash.
        data.get("window", {}).pop("max_start", None)
    if data.get("fixed", {}).get("server") is None:
        # The server knob came after experiments were stored: unset, it keeps their hash.
        data.get("fixed", {}).pop("server", None)
    for key in ("client", "rate", "arrivals"):
        if data.get("workload", {}).get(key) is None:
            # So did the tpcc driver's client and fixed rate: unset, they keep their hash.
            data.get("workload", {}).pop(key, None)
    for knob in ("rate", "change_buffering"):
        if data.get("fixed", {}).get(knob) is None:
            # And the rate and change buffering knobs: unset, they keep their hash.
            data.get("fixed", {}).pop(knob, None)
    if files:
        data["_files"] = files
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def spec_hash(exp: ExperimentSpec) -> str:
    """Hash of the whole validated experiment (not of the file's formatting or comments)."""
    payload = json.dumps(exp.model_dump(mode="json"), sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()
