"""The one error boundary of flushbench.

Expected failures (bad input, missing binaries, a server that refuses a value) raise a
:class:`FlushbenchError` subclass. The CLI prints ``error: what — where — how to fix`` and exits
non-zero; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

#: How much of a user's value a message may quote: a 1 MB string aliased a thousand times in
#: a YAML file must not become a gigabyte of error text (or a MemoryError in the handler).
QUOTE_LIMIT = 80


def bounded(text: str, limit: int = QUOTE_LIMIT) -> str:
    """``text`` cut to ``limit`` characters, saying how much was left out."""
    text = str(text)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text):,} characters)"


def quote(value: object, limit: int = QUOTE_LIMIT) -> str:
    """``repr(value)`` for a message, never longer than about ``limit`` characters.

    Long strings are cut before ``repr`` so a huge value is never copied whole.
    """
    if isinstance(value, (str, bytes)) and len(value) > limit:
        return f"{value[:limit]!r}… ({len(value):,} characters)"
    if isinstance(value, (list, tuple, dict, set, frozenset)) and len(value) > 8:
        return f"<{type(value).__name__} of {len(value):,} items>"
    try:
        return bounded(repr(value), limit)
    except Exception:  # noqa: BLE001 - a value whose repr fails is still named
        return f"<{type(value).__name__}>"


class FlushbenchError(Exception):
    """An expected failure with a message a researcher can act on.

    Parameters
    ----------
    what:
        What went wrong, in one sentence.
    where:
        The file and key path (``experiments/x.yaml: matrix.io_capacity[1]``), or the
        command/path involved.
    fix:
        How to fix it.
    problems:
        When one error stands for several problems (a preflight, an invalid file), each
        problem as one rendered line; empty for a single problem.
    evidence:
        What a failed run keeps beside the message (exit codes, log tails), stored with the run.
    """

    def __init__(
        self,
        what: str,
        where: str | None = None,
        fix: str | None = None,
        *,
        problems: list[str] | None = None,
        evidence: str | None = None,
    ) -> None:
        self.what = what
        self.where = where
        self.fix = fix
        self.problems: list[str] = list(problems or [])
        self.evidence: str | None = evidence
        super().__init__(self.render())

    @classmethod
    def from_problems(cls, headline: str, lines: list[str]) -> FlushbenchError:
        """One error standing for ``lines`` (one problem each); a single line is the message."""
        what = lines[0] if len(lines) == 1 else "\n  ".join([headline, *lines])
        return cls(what, problems=lines)

    def problem_lines(self) -> list[str]:
        """Each problem as one rendered line (just this error's line when it holds one)."""
        return self.problems or [self.render()]

    def render(self) -> str:
        """Return ``where: what — fix`` as one line (parts that are absent are left out)."""
        text = f"{self.where}: {self.what}" if self.where else self.what
        if self.fix:
            text += f" — {self.fix}"
        return text


class ConfigError(FlushbenchError):
    """An experiment file, server profile or knob value is invalid."""


class PreflightError(FlushbenchError):
    """The environment cannot run what was asked (binary, library, disk, huge pages...)."""


class ServerError(FlushbenchError):
    """mysqld failed to start, crashed, or did not apply a requested value."""


class WorkloadError(FlushbenchError):
    """The workload driver failed, hung or produced output that cannot be parsed."""


class StoreError(FlushbenchError):
    """The results database is missing, at an old revision, or inconsistent."""


class AnalysisError(FlushbenchError):
    """The stored results cannot answer the question asked (no runs, mixed metadata...)."""
