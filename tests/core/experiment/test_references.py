"""Reference results in experiment files: one error naming the key path for each mistake,
and a reference never changes a cell's identity or the measurement hash."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.errors import ConfigError
from core.experiment.cells import expand
from core.experiment.hashes import measurement_hash
from core.experiment.loading import load_experiment

HEAD = """version: 1
name: reftest
dataset: {workload: tpcc, warehouses: 1}
workload: {driver: tpcc, duration: 60s}
"""
ROWS = """include:
  - {doublewrite: on, reference: {name: base, notpm: 100}}
  - {doublewrite: off, reference: {name: dw-off, notpm: 150}}
"""


def _load(tmp_path: Path, text: str) -> object:
    path = tmp_path / "exp.yaml"
    path.write_text(HEAD + text)
    return load_experiment(path)


@pytest.mark.parametrize(("text", "where", "message"), [
    (ROWS.replace("notpm: 150", "tps: 150"), "include[1].reference.tps",
     "this experiment's metric is NOTPM: write the reference value as `notpm:`"),
    (ROWS.replace("notpm: 150", "notpm: -3"), "include[1].reference.notpm",
     "greater than 0"),
    (ROWS.replace("notpm: 150", "nopm: 150"), "include[1].reference.nopm",
     "did you mean 'notpm'?"),
    (ROWS.replace("dw-off", "base"), "include[1].reference.name", "used by include[0] too"),
    (ROWS.replace(", notpm: 150", ""), "include[1].reference",
     "a reference without a value"),
    (ROWS + "reference: {source: s, comparisons: [{name: x, a: dw-off, b: bse}]}",
     "reference.comparisons[0].b", "no include row is named 'bse' (row names: base, dw-off)"),
    (ROWS + "reference: {source: s, comparisons: [{name: x, a: 5, b: 0}]}",
     "reference.comparisons[0].a", "include index 5 does not exist"),
    (ROWS + "reference: {source: s, comparisons: [{name: x, a: 1, b: dw-off}]}",
     "reference.comparisons[0]", "a and b name the same row"),
    (ROWS.replace(", notpm: 150", "") + "reference: {source: s, comparisons: "
     "[{name: x, a: dw-off, b: base}]}", "reference.comparisons[0].ratio",
     "include[1] has no reference notpm to compute the ratio from"),
    (ROWS + "reference: {comparisons: []}", "reference.source", "required key is missing"),
    (ROWS + "reference: {source: s, comparisons: [{name: x, a: true, b: base}]}",
     "reference.comparisons[0].a", "got True — write e.g. `a: 0` or `a: base`"),
    (ROWS + "reference: {source: s, comparisons: [{name: x, a: base, b: 1.0}]}",
     "reference.comparisons[0].b", "got 1.0 — write e.g. `b: 0` or `b: base`"),
    (ROWS + "reference: {source: s, url: 'https://u:pw@example.com/post'}", "reference.url",
     "the reference URL carries a user name or password (`user:password@`) — remove the"
     " credentials: a reference URL is published in reports"),
    (ROWS + "reference: {source: s, url: 'https://example.com/post?password=pw'}",
     "reference.url", "carries a `password=` parameter — remove the credentials"),
    (ROWS + "reference: {source: s, url: 'https://TOKEN@github.com/x'}", "reference.url",
     "carries a user name or password"),
    (ROWS + "reference: {source: s, url: 'javascript:alert(1)'}", "reference.url",
     "must be an http:// or https:// link"),
    (ROWS + "description: 'data at postgresql://u:pw@db/x'", "description",
     "this holds a URL with a user name or password (`user:password@`) — remove the"
     " credentials: the experiment is stored with the results and published in reports"),
    (ROWS + "reference: {source: 'see https://h/x?token=abc', url: 'https://h/x'}",
     "reference.source", "this holds a URL with a `token=` parameter"),
    ("include:\n  - {doublewrite: on, name: base}\n  - {doublewrite: off, name: base}\n",
     "include[1].name", "row name 'base' is used by include[0] too"),
    ("include:\n  - {doublewrite: on, name: base}\n"
     "  - {doublewrite: off, reference: {name: base, notpm: 150}}\n",
     "include[1].reference.name", "row name 'base' is used by include[0] too"),
    ("include:\n  - {doublewrite: on, name: first, reference: {name: base, notpm: 1}}\n",
     "include[0].reference.name", "the row is named twice ('first' and reference.name 'base')"
     " — keep `name:` and drop `reference.name`"),
    ("include:\n  - {doublewrite: on, reference: {name: base}}\n", "include[0].reference",
     "a reference without a value — add `notpm: NUMBER`, or name the row with the include"
     " row's own `name:` instead"),
    ("include:\n  - {doublewrite: on, name: 'two words'}\n", "include[0].name",
     "should match pattern"),
    ("include:\n  - {doublewrite: on, name: base}\n  - {doublewrite: off}\n"
     "reference: {source: s, comparisons: [{name: x, a: 1, b: bse, ratio: 2}]}",
     "reference.comparisons[0].b", "no include row is named 'bse' (row names: base)"),
], ids=["metric", "negative", "typo", "duplicate-name", "no-value", "unknown-row",
        "bad-index", "same-row", "no-ratio", "no-source", "bool-row", "float-row",
        "url-userinfo", "url-query-password", "url-token-user", "url-not-http",
        "description-url", "source-url", "duplicate-row-name", "row-name-vs-reference-name",
        "named-twice", "name-only-reference", "name-pattern", "unknown-row-name"])
def test_bad_reference_names_its_key_path(tmp_path: Path, text: str, where: str,
                                          message: str) -> None:
    with pytest.raises(ConfigError) as err:
        _load(tmp_path, text)
    assert f"exp.yaml: {where}: " in str(err.value) and message in str(err.value)
    assert "pw" not in str(err.value) and "abc" not in str(err.value)  # never quoted back


def test_a_reference_changes_no_cell_and_no_measurement(tmp_path: Path) -> None:
    plain = _load(tmp_path, "include:\n  - {doublewrite: on}\n  - {doublewrite: off}\n")
    scored = _load(tmp_path, ROWS + "reference: {source: the post, comparisons: "
                   "[{name: off vs on, a: dw-off, b: 0, ratio: 1.55}]}")
    assert [c.key for c in expand(plain)] == [c.key for c in expand(scored)]
    assert [c.label for c in expand(plain)] == [c.label for c in expand(scored)]
    assert measurement_hash(plain) == measurement_hash(scored)
    dumped = scored.model_dump(mode="json")
    assert dumped["include"][1]["reference"]["notpm"] == 150
    assert dumped["reference"]["comparisons"][0]["b"] == 0


def test_a_row_name_changes_no_cell_and_no_measurement(tmp_path: Path) -> None:
    """Naming the rows of a queued study (``name:``) keeps its finished runs; comparisons and
    claims may name a row by it, with a stated ratio when the row has no reference value."""
    plain = _load(tmp_path, "include:\n  - {doublewrite: on}\n  - {doublewrite: off}\n")
    named = _load(tmp_path, "include:\n  - {doublewrite: on, name: base}\n"
                  "  - {doublewrite: off, name: dw-off}\n"
                  "reference: {source: s, comparisons: [{name: x, a: dw-off, b: base,"
                  " ratio: 1.5}]}\n")
    assert [c.key for c in expand(plain)] == [c.key for c in expand(named)]
    assert [c.label for c in expand(plain)] == [c.label for c in expand(named)]
    assert measurement_hash(plain) == measurement_hash(named)
    assert [inc.name for inc in named.include] == ["base", "dw-off"]  # type: ignore[attr-defined]


def test_the_2011_study_carries_the_posts_numbers() -> None:
    exp = load_experiment(Path(__file__).resolve().parents[3] / "experiments"
                          / "stability-2011.yaml")
    values = [inc.reference.notpm for inc in exp.include]
    assert values == [59922.8, 41257.6, 63898.13, 64501.33, 57620.6, 37509.73, 37039.73,
                      37235.06]
    assert exp.reference is not None and len(exp.reference.comparisons) == 4


def test_a_plain_reference_link_is_kept(tmp_path: Path) -> None:
    url = "https://www.percona.com/blog/mysql-5-5-8-in-search-of-stability/?utm=x#graph"
    exp = _load(tmp_path, ROWS + f"reference: {{source: s, url: '{url}'}}\n"
                "description: 'after https://example.com/a@b, see mail@example.com'\n")
    assert exp.reference.url == url  # type: ignore[attr-defined]
