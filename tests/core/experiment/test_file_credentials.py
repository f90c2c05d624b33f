"""The credential scan of an experiment file reads what the file holds, not what its aliases
expand to, and still names the first place a credential is."""

from __future__ import annotations

import pytest
import yaml

from core.experiment import file_credentials
from core.validation import KeyedValueError


def test_an_aliased_value_is_scanned_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """5,000 aliases of one 200,000-character value: one scan of it (was 5,000 — a gigabyte
    of text for a 200 KB file, half a minute before the file's one-sentence error)."""
    text = ('description: &b "' + "x" * 200_000 + '"\n'
            "matrix:\n  io_capacity: [" + ", ".join(["*b"] * 5000) + "]\n")
    data = yaml.safe_load(text)
    scanned: list[int] = []
    real = file_credentials.url_credentials

    def counted(value: str) -> list[str]:
        scanned.append(len(value))
        return real(value)

    monkeypatch.setattr(file_credentials, "url_credentials", counted)
    file_credentials.no_credentials(data)
    assert scanned.count(200_000) == 1
    assert len(scanned) == 4  # the three keys and the one value


def test_a_credential_behind_an_alias_is_named_where_it_first_appears() -> None:
    data = yaml.safe_load('description: &u "see https://bob:s3cret@example.com/x"\n'
                          "notes: [*u, *u]\n")
    with pytest.raises(KeyedValueError) as refused:
        file_credentials.no_credentials(data)
    assert refused.value.loc == ("description",)


def test_keys_that_are_not_text_are_still_read() -> None:
    file_credentials.no_credentials({5: "a", 6: "b", "c": {7: "d"}})
    with pytest.raises(KeyedValueError):
        file_credentials.no_credentials({"x": {"https://u:p@h/": 1}})
