"""An experiment file carries no credentials: it is stored with the results and published.

The validated experiment is stored whole in the results database (``experiments.spec``,
``experiments.description``), shown by ``flushbench show`` and written into reports and study
bundles, so a URL with a user name, a password or a token anywhere in the file would be
published with it. :func:`no_credentials` looks at every string of the file as written and
refuses the first such URL, naming its key path; the reference's own ``url`` is checked by
its model (:class:`runner.experiment.references.ReferenceSpec`), which says why a reference
URL matters.
"""

from __future__ import annotations

from typing import Any

from core.redaction import url_credentials
from core.validation import KeyedValueError

#: Checked by its own model, with its own message.
_CHECKED_ELSEWHERE = (("reference", "url"),)


def no_credentials(data: Any, loc: tuple[str | int, ...] = ()) -> None:
    """Refuse a URL with credentials anywhere in ``data`` (a file's raw mapping).

    Raises
    ------
    KeyedValueError
        At the key path of the first string (a value, or a key) holding such a URL.
    """
    if isinstance(data, dict):
        for key, value in data.items():
            here = (*loc, str(key))
            _check_text(str(key), here)
            if here not in _CHECKED_ELSEWHERE:
                no_credentials(value, here)
    elif isinstance(data, list):
        for i, value in enumerate(data):
            no_credentials(value, (*loc, i))
    elif isinstance(data, str):
        _check_text(data, loc)


def _check_text(text: str, loc: tuple[str | int, ...]) -> None:
    found = url_credentials(text)
    if found:
        raise KeyedValueError(
            f"this holds a URL with {found[0]} — remove the credentials: the experiment is"
            " stored with the results and published in reports", *loc)
