"""Translate one cell's knobs for a server flavor and version, by walking the knob table.

:func:`translate` returns a :class:`~core.experiment.translation.Translation`: the my.cnf
options, the values ``SHOW GLOBAL VARIABLES`` must show after start (in the server's own
spelling), and the client-side knobs (allocator library, connections). A knob the server lacks
is a :class:`ConfigError` naming the related variables that do exist. Each knob's rule is
:data:`runner.knobs.rules.KNOB_RULES`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from core.errors import ConfigError
from core.experiment.knob_table import KNOBS, RELATED
from core.experiment.knobs import Knobs
from core.experiment.translation import Translation
from core.validation import close_matches
from runner.knobs.ownership import sandbox_problem
from runner.knobs.rules import (
    KNOB_RULES,
    Builder,
    flushing_method_note,
    raw_expected,
    raw_value_text,
)


def translate_partial(
    knobs: Knobs | Mapping[str, Any],
    flavor: str,
    version: tuple[int, ...],
    *,
    where: Callable[[str], str] | None = None,
    option_names: Iterable[str] | None = None,
    allowed: frozenset[str] = frozenset(),
) -> tuple[Translation, list[str]]:
    """Like :func:`translate`, but return the knobs that did translate plus the problem lines.

    Preflight uses it so one absent knob does not hide problems of the cell's other knobs.
    ``allowed`` is the experiment's ``allow_variables`` (see
    :func:`runner.knobs.ownership.sandbox_problem`).
    """
    if not isinstance(knobs, Knobs):
        knobs = Knobs.from_values(dict(knobs))
    b = Builder(flavor, version, where or (lambda k: k), option_names, RELATED)
    for knob in KNOBS:
        value = getattr(knobs, knob.name)
        if value is not None:
            KNOB_RULES[knob.name](b, knob.name, value)
    for name, value in knobs.variables.items():
        knob_key = f"var.{name}"
        refusal = sandbox_problem(name, raw_value_text(value), allowed)
        if refusal is not None:
            b.fail(knob_key, f"variables.{name} {refusal[0]}", refusal[1])
            continue
        if name in b.out.origin:
            b.fail(knob_key, f"variables.{name} is also set by knob {b.out.origin[name]}",
                   f"set it once: drop variables.{name} or the {b.out.origin[name]} knob")
            continue
        text = b.switch_text(value) if isinstance(value, bool) else raw_value_text(value)
        b.set(knob_key, name, text, raw_expected(value))
    flushing_method_note(b)
    return b.out, [p.render() for p in b.problems]


def translate(
    knobs: Knobs | Mapping[str, Any],
    flavor: str,
    version: tuple[int, ...],
    *,
    where: Callable[[str], str] | None = None,
    option_names: Iterable[str] | None = None,
) -> Translation:
    """Translate one cell's logical knobs to server variables for ``flavor`` ``version``.

    Parameters
    ----------
    knobs:
        A :class:`~core.experiment.knobs.Knobs` model or a cell's knob dict (``var.NAME`` for
        raw ones).
    flavor, version:
        From :class:`~runner.server.profiles.ResolvedServer`.
    where:
        Maps a knob name to ``file: key path`` for messages.
    option_names:
        The binary's option list, when known: picks between renamed variables and filters
        the "related" suggestions to variables that exist.

    Raises
    ------
    ConfigError
        Every problem of the cell, one per line (``.problems`` holds them as a list).
    """
    out, lines = translate_partial(knobs, flavor, version, where=where,
                                   option_names=option_names)
    if lines:
        raise ConfigError.from_problems("invalid knobs:", lines)
    return out


def translate_for_option_list(
    translation: Translation,
    options: Mapping[str, str],
    *,
    label: str,
    where: Callable[[str], str] | None = None,
) -> list[str]:
    """Problems for translated variables that the binary does not know (with did-you-mean).

    Parameters
    ----------
    translation:
        The cell's translation.
    options:
        The binary's option list (:func:`runner.server.options.option_list`).
    label:
        ``mariadb-10.11`` for messages.
    where:
        Maps a knob name (from ``translation.origin``) to ``file: key path``.
    """
    where = where or (lambda k: k)
    problems = []
    names = sorted(options)
    for name in translation.server_options:
        if name in options:
            continue
        close = close_matches(name, names, n=3, cutoff=0.75)
        hint = f"did you mean {', '.join(close)}?" if close else "check the name against"
        fix = hint if close else f"{hint} `mysqld --verbose --help`"
        knob = translation.origin.get(name, name)
        problems.append(
            ConfigError(f"{name} is not a variable of {label}", where=where(knob), fix=fix).render()
        )
    return problems
