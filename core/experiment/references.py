"""Reference results in an experiment file: what a reproduction is scored against.

A study that reproduces a published one (the 2011 post) carries the published figures as
data, next to the rows that reproduce them::

    include:
      - {doublewrite: on, max_dirty_pages_pct: 75, io_capacity: 200,
         reference: {name: base, notpm: 59922.8}}
      - {doublewrite: off, max_dirty_pages_pct: 50, io_capacity: 20000,
         reference: {name: dw-off-50, notpm: 63898.13}}
    reference:
      source: "Tkachenko, MySQL 5.5.8 - in search of stability (2011)"
      comparisons:
        - {name: doublewrite off vs on at 50/20000, a: dw-off-50, b: dw-on-50, ratio: 1.55}

A row is referred to by its include index (``2``) or its name (the row's own ``name:``, or
``reference.name``). A comparison's
``ratio`` is the reference's stated a/b ratio; without one it is computed from the two rows'
reference values. With no ``comparisons`` the scorecard compares every referenced row with the
baseline. The reference is not part of a cell's identity: ``IncludeCell.values()`` (what the
cell key hashes) holds knobs only, and ``reference`` is a plan-only key of the measurement
hash — adding a reference to a study keeps its finished runs. The analysis reads the stored
spec (:mod:`analysis.comparisons.scorecard`); the verdict rule is in ``docs/statistics.md``.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from core.experiment.knobs import Knobs
from core.redaction import url_credentials
from core.units import parse_duration
from core.validation import KeyedValueError, StrictModel

#: A reference number: a positive, finite throughput or ratio.
Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]
#: A row's short name (used by comparisons, shown in the scorecard).
RowName = Annotated[str, Field(pattern=r"^[A-Za-z0-9][\w.+-]{0,39}$")]
#: The reference value keys, one per workload metric (``analysis.reading.metric``'s names, lower
#: case).
METRIC_KEYS = ("notpm", "tps")


#: What a reference may say of a row's throughput line (``analysis/comparisons/stability_claims.py``
#: scores each with the stability figures; docs/statistics.md, "Stability claims").
SHAPES = ("flat", "unsteady", "oscillating", "stalls")


class StabilityClaim(StrictModel):
    """What the reference says of one row's line: flat, unsteady, oscillating, stalls."""

    shape: Literal["flat", "unsteady", "oscillating", "stalls"]
    #: The period the reference saw (oscillating only), e.g. ``45s``: shown beside ours.
    period: Annotated[float, Field(gt=0)] | None = None
    #: The reference's words for it, shown in the scorecard.
    says: Annotated[str, Field(max_length=200)] = ""

    @field_validator("period", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> Any:
        if value is None or isinstance(value, (int, float)) and not isinstance(value, bool):
            return value
        return parse_duration(value)


class RowReference(StrictModel):
    """The published result of one include row (in the experiment's metric)."""

    #: What comparisons call the row (default: its include index).
    name: RowName | None = None
    #: The reference's throughput of the row, in the experiment's metric (NOTPM for tpcc).
    notpm: Positive | None = None
    tps: Positive | None = None
    #: Where in the source the number is (a section, a figure), shown in the scorecard.
    note: Annotated[str, Field(max_length=200)] = ""
    #: What the reference says of the row's line (scored beside the throughput).
    stability: StabilityClaim | None = None

    def value(self) -> float | None:
        """The row's reference throughput, whichever metric key holds it."""
        return next((getattr(self, k) for k in METRIC_KEYS if getattr(self, k) is not None),
                    None)


class IncludeCell(Knobs):  # type: ignore[misc,valid-type]  # Knobs is built by create_model
    """An ``include`` row: knob values, its short name and the reference result it reproduces
    (both optional).

    ``values()`` is inherited and lists knobs only, so the cell key ignores the name, the
    reference and the row's own ``repetitions``: naming a row keeps its finished runs.
    """

    #: The row's short name (``dw-off``): reports and plots title the row with it, and
    #: comparisons may name the row by it. ``reference.name`` is the same name, for rows that
    #: carry a published result; a row says it once.
    name: RowName | None = None
    reference: RowReference | None = None
    #: Runs of this row, overriding ``repetitions``/``baseline_repetitions`` (e.g. a second
    #: A/A baseline: each server's reference row of a study on two servers).
    repetitions: Annotated[int, Field(ge=1, le=1000)] | None = None


def row_name(row: Any) -> str | None:
    """An include row's name: its own ``name``, else its reference's, else None."""
    own = getattr(row, "name", None)
    ref = getattr(row, "reference", None)
    return own if own is not None else (ref.name if ref is not None else None)


class ComparisonSpec(StrictModel):
    """One comparison the reference makes: row ``a`` over row ``b``."""

    name: Annotated[str, Field(min_length=1, max_length=120)]
    #: The numerator row: an include index or a row's reference name.
    a: int | RowName
    #: The denominator row.
    b: int | RowName
    #: The reference's stated a/b ratio (default: computed from the rows' reference values).
    ratio: Positive | None = None
    #: How the comparison was read from the source (an interpretation), shown beside it.
    note: Annotated[str, Field(max_length=300)] = ""

    @field_validator("a", "b", mode="before")
    @classmethod
    def _index_or_name(cls, value: Any, info: ValidationInfo) -> Any:
        # YAML's true/false are Python ints (`a: true` would be row 1), and 1.0 would pass
        # as an int too: a row is named by a whole index or a name, nothing else.
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise ValueError(
                f"expected an include index (0, 1, …) or a row's reference name, got"
                f" {value!r} — write e.g. `{info.field_name}: 0` or `{info.field_name}: base`")
        return value


class MostStableClaim(StrictModel):
    """The reference calls one row the most stable of a set (by its line, not its speed)."""

    name: Annotated[str, Field(min_length=1, max_length=120)]
    #: The row the reference calls most stable.
    row: int | RowName
    #: The rows it is the most stable of (the row itself may be listed or not).
    among: Annotated[list[int | RowName], Field(min_length=1, max_length=1000)]
    #: The reference's words for it.
    says: Annotated[str, Field(max_length=200)] = ""

    @field_validator("row", mode="before")
    @classmethod
    def _row(cls, value: Any) -> Any:
        return _refuse_non_row(value, "row")

    @field_validator("among", mode="before")
    @classmethod
    def _rows(cls, value: Any) -> Any:
        if isinstance(value, list):
            for item in value:
                _refuse_non_row(item, "among")
        return value


def _refuse_non_row(value: Any, key: str) -> Any:
    # YAML's true/false are Python ints, and 1.0 would pass as an int too.
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError(f"expected an include index (0, 1, …) or a row's reference name, got"
                         f" {value!r} — write e.g. `{key}: 0` or `{key}: base`")
    return value


#: The longest ``reference.source`` an experiment file may give.
SOURCE_MAX_CHARS = 300


class ReferenceSpec(StrictModel):
    """The experiment's top-level ``reference``: its source and the comparisons it makes."""

    #: At most :data:`SOURCE_MAX_CHARS` in a file; a stored experiment is read whatever it
    #: holds (:meth:`_source_length`).
    source: Annotated[str, Field(min_length=1)]
    #: Where the source is published: an http(s) link, shown in reports (so no credentials).
    url: Annotated[str, Field(max_length=500)] = ""
    #: Empty: every referenced row against the baseline.
    comparisons: Annotated[list[ComparisonSpec], Field(max_length=1000)] = Field(
        default_factory=list)
    #: "X is the most stable of these rows" claims (each row's own line: ``stability``).
    most_stable: Annotated[list[MostStableClaim], Field(max_length=1000)] = Field(
        default_factory=list)

    @field_validator("source")
    @classmethod
    def _source_length(cls, value: str, info: ValidationInfo) -> str:
        # A stored record is read as it was stored (the analysis masks what it shows); a file
        # gets pydantic's own refusal, word for word.
        if len(value) > SOURCE_MAX_CHARS and not (info.context or {}).get("stored"):
            raise PydanticCustomError("string_too_long",
                                      "String should have at most {max_length} characters",
                                      {"max_length": SOURCE_MAX_CHARS})
        return value

    @field_validator("url")
    @classmethod
    def _published_link(cls, value: str, info: ValidationInfo) -> str:
        # The URL is stored with the results and written into report.html as a link.
        if not value:
            return value
        found = url_credentials(value)
        if found and not (info.context or {}).get("stored"):
            # A stored experiment may predate this refusal: it is read, and shown masked.
            raise ValueError(
                f"the reference URL carries {found[0]} — remove the credentials: a reference"
                " URL is published in reports and stored with the results")
        if not value.lower().startswith(("https://", "http://")):
            raise ValueError("the reference URL must be an http:// or https:// link (it is"
                             " a link in reports) — give the address of the published source")
        return value


def check_references(include: list[Any], reference: ReferenceSpec | None,
                     metric_name: str) -> None:
    """Refuse references that cannot be scored; errors name the key path.

    Checks: the value key is the experiment's metric (``notpm`` for NOTPM), row names are
    unique, every comparison names rows that exist and either states a ratio or both rows
    carry a reference value, and ``a`` differs from ``b``.

    Raises
    ------
    KeyedValueError
        ``include[2].reference.tps``, ``reference.comparisons[1].a`` …
    """
    wanted = metric_name.lower()
    names: dict[str, int] = {}
    for i, inc in enumerate(include):
        own, ref = getattr(inc, "name", None), getattr(inc, "reference", None)
        if own is not None and ref is not None and ref.name is not None:
            raise KeyedValueError(
                f"the row is named twice ({own!r} and reference.name {ref.name!r}) — keep"
                " `name:` and drop `reference.name`", "include", i, "reference", "name")
        name = row_name(inc)
        if name is not None:
            if name in names:
                raise KeyedValueError(
                    f"row name {name!r} is used by include[{names[name]}] too — names"
                    " must be unique", "include", i, "name" if own is not None else "reference",
                    *(() if own is not None else ("name",)))
            names[name] = i
    rows = [getattr(inc, "reference", None) for inc in include]
    for i, ref in enumerate(rows):
        if ref is None:
            continue
        for key in METRIC_KEYS:
            if key != wanted and getattr(ref, key) is not None:
                raise KeyedValueError(
                    f"this experiment's metric is {metric_name}: write the reference value as"
                    f" `{wanted}:`", "include", i, "reference", key)
        if ref.value() is None and reference is None:
            fix = (f"add `{wanted}: NUMBER`, or name the row with the include row's own"
                   " `name:` instead" if ref.name is not None and ref.stability is None
                   else f"add `{wanted}: NUMBER`")
            raise KeyedValueError(f"a reference without a value — {fix}",
                                  "include", i, "reference")
    if reference is None:
        return
    for j, claim in enumerate(reference.most_stable):
        for k, row in enumerate([claim.row, *claim.among]):
            where = ("reference", "most_stable", j, "row") if k == 0 else (
                "reference", "most_stable", j, "among", k - 1)
            _row_index(row, include, names, where)
    for j, comp in enumerate(reference.comparisons):
        index = {}
        for side in ("a", "b"):
            row = getattr(comp, side)
            if isinstance(row, int):
                if not 0 <= row < len(include):
                    raise KeyedValueError(
                        f"include index {row} does not exist (the file has {len(include)}"
                        f" include rows, counted from 0)", "reference", "comparisons", j, side)
                index[side] = row
            elif row in names:
                index[side] = names[row]
            else:
                known = ", ".join(sorted(names)) or "none: give include rows `name: …`"
                raise KeyedValueError(f"no include row is named {row!r} (row names: {known})",
                                      "reference", "comparisons", j, side)
        if index["a"] == index["b"]:
            raise KeyedValueError("a and b name the same row", "reference", "comparisons", j)
        if comp.ratio is None:
            for side in ("a", "b"):
                ref = rows[index[side]]
                if ref is None or ref.value() is None or not math.isfinite(ref.value() or 0):
                    raise KeyedValueError(
                        f"include[{index[side]}] has no reference {wanted} to compute the ratio"
                        " from — state the reference's `ratio:`, or give the row"
                        f" `reference: {{{wanted}: NUMBER}}`",
                        "reference", "comparisons", j, "ratio")


def _row_index(row: int | str, include: list[Any], names: dict[str, int],
               where: tuple[str | int, ...]) -> int:
    """The include index a claim names (by index or reference name), or the error."""
    if isinstance(row, int):
        if not 0 <= row < len(include):
            raise KeyedValueError(f"include index {row} does not exist (the file has"
                                  f" {len(include)} include rows, counted from 0)", *where)
        return row
    if row in names:
        return names[row]
    known = ", ".join(sorted(names)) or "none: give include rows `name: …`"
    raise KeyedValueError(f"no include row is named {row!r} (row names: {known})", *where)


def _names(include: list[Any]) -> dict[str, int]:
    """Each row's name → its include index (names are unique: :func:`check_references`)."""
    return {name: i for i, inc in enumerate(include) if (name := row_name(inc)) is not None}


def check_claims(include: list[Any], reference: ReferenceSpec | None, *,
                 report_interval: float, window: float) -> None:
    """Refuse reference claims that say nothing or contradict each other (an experiment
    *file*'s rule: a stored experiment is not checked again, so queued studies stay readable).

    - a ``period`` on a claim that is not ``oscillating``; a period the line cannot show
      (shorter than two report intervals, or not twice inside the measurement window);
    - a ``most_stable`` claim naming a row twice, or only its own row;
    - two ``most_stable`` claims over the same rows naming different rows;
    - two comparisons of the same two rows.

    Raises
    ------
    KeyedValueError
        Naming the key path (``include[2].reference.stability.period``,
        ``reference.most_stable[1].among[3]``), with the fix.
    """
    for i, inc in enumerate(include):
        ref = getattr(inc, "reference", None)
        claim = ref.stability if ref is not None else None
        if claim is None or claim.period is None:
            continue
        where = ("include", i, "reference", "stability", "period")
        if claim.shape != "oscillating":
            raise KeyedValueError(f"a period belongs to `shape: oscillating`, and this claim is"
                                  f" {claim.shape}: it would be ignored — remove `period`, or"
                                  " say `shape: oscillating`", *where)
        if claim.period < 2 * report_interval:
            raise KeyedValueError(
                f"a period of {claim.period:g}s cannot be seen in a line measured every"
                f" {report_interval:g}s (the shortest it shows is two intervals,"
                f" {2 * report_interval:g}s) — check the period, or shorten"
                " workload.report_interval", *where)
        if claim.period > window / 2:
            raise KeyedValueError(
                f"a period of {claim.period:g}s is not seen twice in the {window:g}s measurement"
                " window — check its unit (45s, not 45m or 45d), or widen the window", *where)
    if reference is None:
        return
    names = _names(include)
    sets: list[tuple[int, set[int]]] = []
    for j, claim in enumerate(reference.most_stable):
        row = _row_index(claim.row, include, names, ("reference", "most_stable", j, "row"))
        seen: dict[int, int | str] = {}
        for k, item in enumerate(claim.among):
            index = _row_index(item, include, names, ("reference", "most_stable", j, "among", k))
            if index in seen:
                raise KeyedValueError(
                    f"include[{index}] is named twice in `among` (as {seen[index]!r} and"
                    f" {item!r}) — name each row once", "reference", "most_stable", j,
                    "among", k)
            seen[index] = item
        rows = set(seen) | {row}
        if rows == {row}:
            raise KeyedValueError(
                "the row is called the most stable among itself alone: that says nothing —"
                " list the other rows it is more stable than in `among`",
                "reference", "most_stable", j, "among")
        for earlier, (other_row, other_rows) in enumerate(sets):
            if other_row != row and {row, other_row} <= rows & other_rows:
                raise KeyedValueError(
                    f"most_stable[{earlier}] calls include[{other_row}] the most stable of"
                    f" rows that include[{row}] is here called the most stable of too — the"
                    " claims contradict each other: keep the one the source makes",
                    "reference", "most_stable", j, "row")
        sets.append((row, rows))
    pairs: dict[frozenset[int], int] = {}
    for j, comp in enumerate(reference.comparisons):
        pair = frozenset(_row_index(getattr(comp, side), include, names,
                                    ("reference", "comparisons", j, side)) for side in "ab")
        if pair in pairs:
            raise KeyedValueError(
                f"comparisons[{pairs[pair]}] compares the same two rows — compare each pair"
                " once (a ratio b/a is 1 / the ratio a/b)", "reference", "comparisons", j)
        pairs[pair] = j
