"""Every knob at its sample levels, judged by one server's own option parser (no server started).

``flushbench server check PROFILE`` and the knob table of docs/domain.md ask the same question
of a binary: for each knob level, what does flushbench's rule write into my.cnf, and does the
binary take it? Each level gets one verdict:

- **applied** — the rule wrote variables, the binary lists each, its ``--verbose --help``
  parse took the values without a word, and the values it would run with are the ones the
  rule expects (:func:`core.flavors.values_equal`);
- **built-in** — the rule writes nothing because the server always behaves so (MySQL 5.5
  flushes the whole neighbour area);
- **refused** — the binary complained (its own message is the reason: a value adjusted, an
  unknown value) or parsed a different value, or the rule refuses the value for this server
  (not one of its values, beyond its limit); then the value is given to the variable the rule
  names anyway, and the binary's word on it is kept beside the rule's (``server_says``);
- **absent** — the server has no such variable: the rule says so, the binary does not list
  the variable, or its own help says it ignores it ("Deprecated and ignored").

Only a started server can show that an applied value really took effect; the test that writes
docs/domain.md's table starts one per group of applied levels
(tests/runner/server/test_knobs_per_server.py).
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from typing import Literal

from core.errors import FlushbenchError, PreflightError
from core.flavors import values_equal
from runner.knobs.translate import translate_for_option_list, translate_partial
from runner.proc import deadline_passed, probe_deadline
from runner.server.options import dry_run, ignored_options, option_list
from runner.server.profiles import ResolvedServer, load_profile, profile_path, resolve_server

Status = Literal["applied", "built-in", "refused", "absent"]

#: ``server check``'s probes together (--version, --verbose --help, one parse per level): a
#: real server answers them all in 1–4 s; a binary slow at each is cut here, not after 20 s
#: times every level.
CHECK_DEADLINE_S = 25

#: Levels tried per knob: the server-variable knobs (host and client knobs have no variable),
#: every value of each enum, one value of each number.
SAMPLE_LEVELS: dict[str, list] = {
    "doublewrite": [False],
    "max_dirty_pages_pct": [50.0],
    "max_dirty_pages_pct_lwm": [10.0],
    "io_capacity": [400],
    "io_capacity_max": [800],
    "log_file_size": [64 * 1024**2],
    "flush_neighbor_pages": ["none", "cont", "area"],
    "adaptive_flushing": [False],
    "adaptive_checkpoint": ["none", "reflex", "estimate", "keep_average", "legacy",
                            "high_checkpoint"],
    "buffer_pool_size": [96 * 1024**2],
    "buffer_pool_instances": [1],
    "flush_log_at_trx_commit": [2],
    "flush_method": ["O_DIRECT", "O_DIRECT_NO_FSYNC"],
}


@dataclass
class KnobVerdict:
    """What one server's option parser made of one knob level."""

    knob: str
    level: object
    status: Status
    #: The rule's my.cnf lines (name → value text) and what SHOW GLOBAL VARIABLES must show.
    options: dict[str, str] = field(default_factory=dict)
    expected: dict[str, str] = field(default_factory=dict)
    #: applied: variable → the value the binary's parse reports.
    parsed: dict[str, str] = field(default_factory=dict)
    #: refused/absent: the problem line (flushbench's rule) or the server's own message;
    #: built-in: the rule's note.
    reason: str = ""
    #: A value the rule refuses, given to the variable it names anyway: the binary's own word
    #: on it ("" when the rule names no variable the binary lists).
    server_says: str = ""


def level_text(level: object) -> str:
    """A level as an experiment file would write it (``off``, ``64M``, ``50``, ``none``)."""
    if isinstance(level, bool):
        return "on" if level else "off"
    if isinstance(level, int) and level >= 1024**2 and level % 1024**2 == 0:
        return f"{level // 1024**2}M"
    if isinstance(level, float) and level.is_integer():
        return str(int(level))
    return str(level)


_ABSENT_RE = re.compile(r"absent on [\w.-]+(?:; (?P<rest>.+)| \((?P<aside>.+)\))?")


def short_reason(reason: str) -> str:
    """A verdict's reason as a table shows it beside the server's name: without its ``key:``
    prefix, its fix, the repeated ``knob=value is`` and ``absent on SERVER``."""
    reason = reason.split(": ", 1)[-1].split(" — ")[0].split("\n")[0]
    reason = re.sub(r"^\S+=\S+ is ", "", reason)
    absent = _ABSENT_RE.fullmatch(reason)
    if absent:
        return absent.group("rest") or absent.group("aside") or "no such variable"
    return reason


def judge(server: ResolvedServer, knob: str, level: object) -> KnobVerdict:
    """The verdict of ``server``'s option parser on one knob level (no server started)."""
    options = option_list(server)
    tr, problems = translate_partial({knob: level}, server.flavor, server.version,
                                     option_names=options)
    verdict = KnobVerdict(knob, level, "applied", dict(tr.server_options), dict(tr.expected))
    if problems:
        verdict.status = "absent" if " is absent on " in problems[0] else "refused"
        verdict.reason = problems[0]
        if verdict.status == "refused":
            verdict.server_says = _second_opinion(server, level, problems[0])
        return verdict
    unknown = translate_for_option_list(tr, options, label=server.label)
    if unknown:
        verdict.status, verdict.reason = "absent", unknown[0]
        return verdict
    ignored = {n: t for n, t in ignored_options(server).items() if n in tr.server_options}
    if ignored:
        name, text = next(iter(ignored.items()))
        verdict.status = "absent"
        verdict.reason = (f"{knob}: {knob}={level_text(level)} is ignored by {server.label}:"
                          f" its help says of {name} \"{text}\"")
        return verdict
    if not tr.server_options:
        verdict.status = "built-in" if tr.notes else "applied"
        verdict.reason = "; ".join(tr.notes)
        return verdict
    return _parse(server, verdict)


_NAMED_VARIABLE_RE = re.compile(r"\((innodb_\w+)\)")
#: ``[ERROR] /opt/…/bin/mysqld: `` or ``[Warning] `` before the server's words.
_SPEAKER_RE = re.compile(r"^\[(?:ERROR|Warning)\]\s+(?:(?:/\S+/)?(?:mysqld|mariadbd):\s+)?")


def server_words(message: str) -> str:
    """A server message without its level and the binary's path (``[ERROR] /…/mysqld:``)."""
    return _SPEAKER_RE.sub("", message).strip()


def _second_opinion(server: ResolvedServer, level: object, problem: str) -> str:
    """What the binary says of a value the rule refuses, given to the variable the rule names.

    The rule's refusal holds for this binary when the binary refuses the value too; a binary
    that takes it silently shows a rule stricter than the server.
    """
    named = _NAMED_VARIABLE_RE.search(problem)
    if named is None or named.group(1) not in option_list(server):
        return ""
    result = dry_run(server, {named.group(1): level_text(level)})
    if result.messages:
        return server_words(result.messages[0])
    return f"takes {named.group(1)}={level_text(level)} (the rule is stricter than the binary)"


def _parse(server: ResolvedServer, verdict: KnobVerdict) -> KnobVerdict:
    """Let the binary parse the rule's options: silence and the expected values, or refused."""
    result = dry_run(server, verdict.options)
    if result.messages:
        verdict.status, verdict.reason = "refused", server_words(result.messages[0])
        return verdict
    for name, expected in verdict.expected.items():
        parsed = result.values.get(name)
        if parsed is not None and not values_equal(expected, parsed):
            verdict.status = "refused"
            verdict.reason = (f"{verdict.knob}: {name}={verdict.options[name]} parses as"
                              f" {parsed} on {server.label}, not {expected}")
            return verdict
        verdict.parsed[name] = parsed if parsed is not None else verdict.options[name]
    return verdict


def check_knobs(server: ResolvedServer,
                levels: dict[str, list] | None = None) -> list[KnobVerdict]:
    """A verdict per knob level of ``levels`` (default :data:`SAMPLE_LEVELS`), in table order."""
    levels = SAMPLE_LEVELS if levels is None else levels
    return [judge(server, knob, level) for knob, values in levels.items() for level in values]


def check_profile(profile: str) -> tuple[ResolvedServer, list[KnobVerdict]]:
    """``server check PROFILE``: the profile resolved and every sample level judged, all its
    probes within :data:`CHECK_DEADLINE_S` together.

    Raises
    ------
    FlushbenchError
        The profile is invalid, its binary does not run, or its probes took too long.
    """
    where = str(profile_path(profile))
    with probe_deadline(CHECK_DEADLINE_S):
        try:
            server = resolve_server(load_profile(profile), where)
            return server, check_knobs(server)
        except (FlushbenchError, subprocess.TimeoutExpired):
            if not deadline_passed():
                raise
    raise PreflightError(
        f"the binary's probes (--version, --verbose --help per knob level) took over"
        f" {CHECK_DEADLINE_S} s altogether, and a server answers them in a few", where=where,
        fix="check that the profile names a working mysqld or mariadbd for this system")
