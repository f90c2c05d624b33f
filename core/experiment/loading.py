"""Reading an experiment file: the model's rules, plus what a *file* may not say.

A stored experiment is validated by the model alone; a file is also refused for what would do
nothing or contradict itself (a setting that does nothing, a knob written without a value, a URL
with credentials), so a study queued before such a rule existed stays readable.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from core.errors import ConfigError
from core.experiment.file_credentials import no_credentials
from core.experiment.references import check_claims
from core.experiment.spec import ExperimentSpec, start_jitter
from core.paths import SERVER_PROFILES_DIR, named_file
from core.validation import KeyedValueError, format_loc, load_versioned


def load_experiment(path: str | Path) -> ExperimentSpec:
    """Read and validate an experiment file; errors name the file and key path.

    Besides the model's rules, a *file* may not say what would do nothing or contradict itself
    (:func:`pointless_settings`, :func:`core.experiment.references.check_claims`); a stored
    experiment is not held to these, so a study queued before they existed stays readable.
    """
    path = Path(path)
    exp = load_versioned(path, ExperimentSpec, "experiment", raw_check=_file_rules)
    try:
        pointless_settings(exp, path.parent)
        start, end = exp.window.resolve(exp.workload.duration)
        check_claims(exp.include, exp.reference, report_interval=exp.workload.report_interval,
                     window=end - start)
    except KeyedValueError as exc:
        raise ConfigError(str(exc), where=f"{path}: {format_loc(exc.loc)}") from None
    return exp


def pointless_settings(exp: ExperimentSpec, folder: Path | None = None) -> None:
    """Refuse settings an experiment file states that would do nothing (the user meant
    something else): ``max_reruns`` without ``action: rerun``, a ``seed`` neither the order
    mode nor a start offset draws from, ``blocks``/``interleaved`` when every cell runs once
    (one round), and one server profile written two ways (two cells running the same server).

    ``folder``: the experiment file's folder (relative profile paths are read against it).

    Raises
    ------
    KeyedValueError
        Naming the key path (``disturbed.max_reruns``, ``matrix.server[1]``), with the fix.
    """
    disturbed = exp.disturbed
    if "max_reruns" in disturbed.model_fields_set and disturbed.action != "rerun":
        raise KeyedValueError(
            f"max_reruns counts the reruns of `action: rerun`, and the action is"
            f" {disturbed.action}: it would do nothing — remove max_reruns, or set"
            " `action: rerun`", "disturbed", "max_reruns")
    order = exp.order
    # The seed also draws each run's start offset (pre_run.start_jitter, start_offset()).
    if "seed" in order.model_fields_set and order.mode not in ("randomized", "blocks") \
            and start_jitter(exp) == 0:
        raise KeyedValueError(
            f"the seed draws the order of `mode: randomized` or `mode: blocks` and the start"
            f" offsets of pre_run.start_jitter; the mode is {order.mode} and no run has a start"
            " offset: it would do nothing — remove seed, or set the mode", "order", "seed")
    rounds = max([exp.repetitions, exp.baseline_repetitions or 1,
                  *(inc.repetitions or 1 for inc in exp.include)])
    if order.mode in ("blocks", "interleaved") and rounds == 1:
        same = "`mode: randomized` with the same seed" if order.mode == "blocks" \
            else "the order as written"
        raise KeyedValueError(
            f"every cell runs once, so `mode: {order.mode}` has one round, which is {same}"
            f" — write that, or raise repetitions", "order", "mode")
    _one_spelling_per_server(exp, folder)


def _one_spelling_per_server(exp: ExperimentSpec, folder: Path | None) -> None:
    """Two spellings of one server profile (``mariadb-debian`` and
    ``configs/servers/mariadb-debian.yaml``) make two cells that run the same server."""
    written: list[tuple[tuple[str | int, ...], str]] = []
    if "server" in exp.model_fields_set:
        written.append((("server",), exp.server))
    if exp.fixed.values().get("server") is not None:
        written.append((("fixed", "server"), str(exp.fixed.values()["server"])))
    for i, level in enumerate(exp.matrix.axes().get("server", [])):
        written.append((("matrix", "server", i), str(level)))
    for i, inc in enumerate(exp.include):
        if inc.server is not None:
            written.append((("include", i, "server"), str(inc.server)))
    seen: dict[Path, tuple[tuple[str | int, ...], str]] = {}
    for loc, value in written:
        try:
            profile = named_file(value, SERVER_PROFILES_DIR, (".yaml", ".yml"),
                                 folder).resolve()
        except (OSError, RuntimeError):  # a link loop: the profile check says so later
            continue
        first = seen.setdefault(profile, (loc, value))
        if first[1] != value:
            # The same words as preflight's check of a stored experiment (_spelt_twice).
            raise KeyedValueError(
                f"{value!r} and {first[1]!r} ({format_loc(first[0])}) are one server profile"
                f" ({profile}), spelt two ways: its cells would be measured twice as two"
                f" servers — write it one way (e.g. {first[1]!r}) everywhere the experiment"
                " names it", *loc)


def _file_rules(data: dict[str, Any]) -> None:
    """What the file itself may say: no key without a value, no URL with credentials."""
    no_empty_values(data)
    no_credentials(data)



def no_empty_values(data: dict[str, Any]) -> None:
    """Refuse a knob, raw variable or axis written with no value in an experiment *file*.

    ``max_dirty_pages_pct:`` with nothing after it is YAML null, which the knob models read as
    "not set": an axis (or a fixed value) the user wrote would vanish silently. Checked on the
    file's raw data only: a stored (dumped) experiment has None for every unset knob.

    Raises
    ------
    KeyedValueError
        Naming the key path (``matrix.max_dirty_pages_pct``).
    """
    for section in ("fixed", "matrix"):
        _refuse_empty(data.get(section), (section,), axis=section == "matrix")
    if not isinstance(data.get("baseline"), list):
        _refuse_empty(data.get("baseline"), ("baseline",), axis=False)
    for section in ("include", "exclude", "baseline"):
        items = data.get(section)
        if isinstance(items, list):
            for i, item in enumerate(items):
                _refuse_empty(item, (section, i), axis=False)


def _refuse_empty(mapping: Any, loc: tuple[str | int, ...], *, axis: bool) -> None:
    """A knob (or raw variable) written with no value is an error naming its key."""
    if not isinstance(mapping, dict):
        return
    for key, value in mapping.items():
        if key == "variables" and isinstance(value, dict):
            _refuse_empty(value, (*loc, "variables"), axis=axis)
            continue
        if value is None:
            what = ("has no levels — list at least one, e.g. [60, 90], or remove the key"
                    if axis else "has no value — give one, or remove the key")
            raise KeyedValueError(what, *loc, str(key))
        if axis and isinstance(value, list):
            for i, level in enumerate(value):
                if level is None:
                    raise KeyedValueError("this level is empty — give a value or remove it",
                                          *loc, str(key), i)
