"""The fast lane's ``study_db`` marker (tests/conftest.py): a test that reads a committed
study's whole database is marked — through a fixture that copies one, or a module that copies
one itself — and a test of a synthetic store is not."""

from __future__ import annotations

import types
from types import SimpleNamespace

from tests.conftest import reads_a_committed_study
from tests.support import recorded, synthetic_store


def _item(fixtures: list[str], params: dict[str, object] | None = None,
          **module_names: object) -> SimpleNamespace:
    module = types.ModuleType("tests.fake_module")
    vars(module).update(module_names)
    callspec = None if params is None else SimpleNamespace(params=params)
    return SimpleNamespace(fixturenames=fixtures, module=module, callspec=callspec)


def test_a_reader_of_a_committed_study_is_marked_and_a_synthetic_one_is_not() -> None:
    assert reads_a_committed_study(_item(["tmp_path", "recorded_flash"]))
    assert reads_a_committed_study(_item(["tmp_path"], recorded_copy=recorded.recorded_copy))
    assert reads_a_committed_study(_item([], recorded_pair=recorded.recorded_pair))
    assert not reads_a_committed_study(_item(["tmp_path", "study_db"],
                                             build_store=synthetic_store.build_store))
    # A parameter naming the fixture a test asks for with `request.getfixturevalue`.
    assert reads_a_committed_study(_item(["request"], {"name": "recorded_flash", "n": 3}))
    assert not reads_a_committed_study(_item(["request"], {"name": "synthetic"}))
    # The committed databases' paths, read by a module that opens one its own way.
    assert reads_a_committed_study(_item(["tmp_path"], RECORDED=recorded.RECORDED))
