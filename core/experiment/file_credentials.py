"""An experiment file carries no credentials: it is stored with the results and published.

The validated experiment is stored whole in the results database (``experiments.spec``,
``experiments.description``), shown by ``flushbench show`` and written into reports and study
bundles, so a URL with a user name, a password or a token anywhere in the file would be
published with it. :func:`no_credentials` looks at every string of the file as written and
refuses the first such URL, naming its key path; the reference's own ``url`` is checked by
its model (:class:`core.experiment.references.ReferenceSpec`), which says why a reference
URL matters.
"""

from __future__ import annotations

from typing import Any

from core.redaction import url_credentials
from core.validation import KeyedValueError

#: Checked by its own model, with its own message.
_CHECKED_ELSEWHERE = (("reference", "url"),)


def no_credentials(data: Any, loc: tuple[str | int, ...] = (),
                   _seen: set[int] | None = None) -> None:
    """Refuse a URL with credentials anywhere in ``data`` (a file's raw mapping).

    A YAML alias repeats one object: each string object is scanned once, so a value aliased
    thousands of times (5,000 × 200,000 characters: a gigabyte to scan) costs what the file
    holds, not what it expands to.

    Raises
    ------
    KeyedValueError
        At the key path of the first string (a value, or a key) holding such a URL.
    """
    seen = set() if _seen is None else _seen
    if isinstance(data, dict):
        for key, value in data.items():
            here = (*loc, str(key))
            if isinstance(key, str):
                _check_once(key, here, seen)
            else:  # a number or a date as a key: its text is made here, never aliased
                _check_text(str(key), here)
            if here not in _CHECKED_ELSEWHERE:
                no_credentials(value, here, seen)
    elif isinstance(data, list):
        for i, value in enumerate(data):
            no_credentials(value, (*loc, i), seen)
    elif isinstance(data, str):
        _check_once(data, loc, seen)


def _check_once(text: str, loc: tuple[str | int, ...], seen: set[int]) -> None:
    """:func:`_check_text` of a string object of the file's data not scanned before (its
    first key path is the one a refusal names). The data holds every such object for the
    whole walk, so an id is never reused within it."""
    if id(text) in seen:
        return
    seen.add(id(text))
    _check_text(text, loc)


def _check_text(text: str, loc: tuple[str | int, ...]) -> None:
    found = url_credentials(text)
    if found:
        raise KeyedValueError(
            f"this holds a URL with {found[0]} — remove the credentials: the experiment is"
            " stored with the results and published in reports", *loc)
