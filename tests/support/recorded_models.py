"""A committed study's report model, built once per test session for every test that reads it.

Several test files read the report model of the same committed study — its figures' colours
and axes, its first screen, its latency parts, its servers — and each built it again (3–5 CPU-s
a build, on two cores the whole suite shares). The first worker to ask builds it, from a
private copy of the committed database, and writes it whole (pickled to a file renamed into
place, under a lock); the others read that file. The model is what
:func:`analysis.report.build.build_report_model` returns for that database and experiment:
the product's own build, once. A test must not change the model it is given (tests that
build from a database they altered, or with other arguments, build their own).
"""

from __future__ import annotations

import fcntl
import pickle
import tempfile
from pathlib import Path

import pytest

from analysis.report.build import build_report_model
from analysis.report.model import ReportModel
from tests.support.parallel import session_folder
from tests.support.recorded import RECORDED, copy_recorded

#: Models read in this process (study name → model): each worker unpickles a model once.
_READ: dict[str, ReportModel] = {}


def recorded_report_model(request: pytest.FixtureRequest, study: str,
                          experiment: str | None = None) -> ReportModel:
    """The report model of the committed study ``study`` (a :data:`RECORDED` name) for
    ``experiment`` (None: the database's latest, as ``report`` picks it)."""
    key = f"{study}@{experiment or ''}"
    if key in _READ:
        return _READ[key]
    factory: pytest.TempPathFactory = request.getfixturevalue("tmp_path_factory")
    shared = session_folder(request.config, factory, "report-models")
    built = shared / f"{key}.pickle"
    with (shared / f"{key}.lock").open("w") as lock:  # one build of each model at a time
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes (or the worker dies)
        if not built.is_file():
            staging = Path(tempfile.mkdtemp(dir=shared, prefix="building-"))
            db = copy_recorded(study, staging / RECORDED[study].name)
            model = build_report_model(db, experiment)
            (staging / "model.pickle").write_bytes(pickle.dumps(model))
            (staging / "model.pickle").rename(built)
    _READ[key] = pickle.loads(built.read_bytes())
    return _READ[key]
