"""Experiments from several results databases, compared like with like.

A study is compared with another study: the MariaDB run under an operations limit against
the MySQL 5.5 run under a bandwidth limit, this week's host against last month's. Each
*source* is one experiment in one database (a SQLite file, a study bundle or a PostgreSQL
URL), written ``NAME@DB`` or given as ``--db`` once per experiment.

- **Matching.** Cells are matched by the values of the knobs that vary within any of the
  experiments (or the knobs named with ``on``), or by hand (``pairs``: one cell number per
  source, when configurations meant to be compared differ in their knobs). Knobs constant
  within each experiment (the storage limit, the redo size, the server) are the sources'
  context: where they differ the comparison says so, since that difference is what is
  being compared. A cell whose knob values appear in only one source (or that no pair names)
  is listed as unmatched and left out; two cells of one source with the same match values
  are refused (name more knobs with ``on``, or pair by hand).
- **Statistics.** Each source is first compared on its own
  (:func:`analysis.comparisons.compare.compare`: its cells against its baseline, its own
  metadata check). Then every source is a *block*,
  as hosts are for a spread experiment (:mod:`analysis.comparisons.hosts`): each matched cell's
  ratio to the baseline is taken within each source and pooled with inverse-variance weights, tested
  with van Elteren's stratified rank test; Cochran's Q says when the sources disagree about
  an effect. Finally, the same cell is compared between sources (source *k* over the first,
  the rule of :func:`analysis.statistics.verdicts.verdict`): how much this database's runs
  differ from that one's for one configuration.
- Every table names the source each number came from (its label, ``NAME@FILE``).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis.comparisons.compare import Comparison, compare, compare_cells
from analysis.comparisons.hosts import host_of
from analysis.reading.metric import metric_view
from analysis.reading.query import varying_knobs
from analysis.statistics.verdicts import verdict
from analysis.tables.summaries import cell_summary
from core.errors import AnalysisError
from store.models import RunStatus

#: The metadata a sources table shows (one value per source, or the distinct values).
SOURCE_FACTS = ("server_flavor", "server_version", "hostname", "dataset_key", "kernel",
                "cpu_model")


@dataclass(frozen=True)
class Source:
    """One experiment in one results database, and the label every table shows for it."""

    experiment: str
    db: str | None
    label: str


def _db_name(db: str | None) -> str:
    """A short, password-free name of a database for labels: file name, or URL host/db."""
    if db is None:
        return "default"
    if "://" in db:
        from sqlalchemy.engine import make_url

        try:
            url = make_url(db)
        except Exception:  # noqa: BLE001 - a bad URL fails later, when it is opened
            return "database"
        if url.get_backend_name() == "sqlite":
            return Path(url.database or "sqlite").name
        return f"{url.host or 'local'}/{url.database or ''}"
    return Path(db).name


def parse_sources(experiments: list[str], dbs: list[str] | None) -> list[Source]:
    """Sources from ``compare A B … --db X --db Y`` and ``NAME@DB`` arguments.

    ``NAME@DB`` names its own database (the first ``@`` splits: experiment names never hold
    one, URLs may). Otherwise: one ``--db`` (or none) serves every experiment; one experiment
    with several ``--db`` is that experiment in each; N experiments with N ``--db`` pair up
    in order.

    Raises
    ------
    AnalysisError
        When experiments and databases cannot be paired.
    """
    dbs = list(dbs or [])
    plain = [e for e in experiments if "@" not in e]
    if len(experiments) == 1 and not plain:
        pairs = [tuple(experiments[0].split("@", 1))]
    elif len(experiments) == 1 and len(dbs) > 1:
        pairs = [(experiments[0], d) for d in dbs]
    elif len(dbs) <= 1:
        pairs = [tuple(e.split("@", 1)) if "@" in e else (e, dbs[0] if dbs else None)
                 for e in experiments]
    elif len(dbs) == len(experiments) and len(plain) == len(experiments):
        pairs = list(zip(experiments, dbs, strict=True))
    else:
        raise AnalysisError(
            f"{len(experiments)} experiments and {len(dbs)} --db options do not pair up",
            where="command line",
            fix="give one --db per experiment (in order), one --db for all, or write each as"
                " NAME@DATABASE")
    for name, db in pairs:
        if not name or db == "":
            raise AnalysisError(f"{name or '?'}@{db or '?'}: an experiment and a database are"
                                " needed on both sides of @", where="command line",
                                fix="write NAME@PATH (a file, a bundle or a URL)")
    labels = [f"{name}@{_db_name(db)}" if len(pairs) > 1 else str(name) for name, db in pairs]
    # Two sources with the same label (same name, same file name): number them.
    counts: dict[str, int] = {}
    out = []
    for (name, db), label in zip(pairs, labels, strict=True):
        counts[label] = counts.get(label, 0) + 1
        if labels.count(label) > 1:
            label = f"{label}#{counts[label]}"
        out.append(Source(str(name), db, label))
    return out


@dataclass
class CrossComparison:
    """Everything ``flushbench compare`` across databases prints and its report shows."""

    sources: list[Source]
    per_source: list[Comparison]
    #: Knobs the cells were matched on.
    on: list[str]
    #: Per matched cell and source: cell label, runs, mean with CI, ratio to the source's own
    #: baseline with its verdict (long format: ``key, label, source, …``).
    cells: pd.DataFrame
    #: Per matched cell: the ratio to the baseline pooled over sources (blocks).
    pooled: pd.DataFrame
    #: Per matched cell and source after the first: that source's runs over the first's.
    between: pd.DataFrame
    #: Knobs constant within each source whose values differ between sources (as text).
    context: dict[str, dict[str, str]]
    unmatched: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def metric_name(self) -> str:
        """NOTPM or TPS (the same for every source)."""
        return metric_view(self.per_source[0].experiment).name


def database_identity(db: str | None) -> str:
    """Which database a source's ``db`` names, for telling sources apart (never printed):
    its file (a path, a bundle, a ``sqlite:///`` URL) by device and inode — one file under
    two names, a symbolic or a hard link, is one database — else the URL as given."""
    import os

    from sqlalchemy.engine import make_url

    from store.db import DEFAULT_DB_PATH

    value = db if db is not None else os.environ.get("FLUSHBENCH_DB", str(DEFAULT_DB_PATH))
    if "://" not in value:
        return _file_identity(Path(value))
    try:
        url = make_url(value)
    except Exception:  # noqa: BLE001 - a bad URL fails later, when it is opened
        return value
    if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:"):
        return _file_identity(Path(url.database))
    return value


def _file_identity(path: Path) -> str:
    """``file DEV:INODE`` of an existing file, else its absolute path (it fails later, when
    opened)."""
    import os

    try:
        st = os.stat(path.expanduser())
    except (OSError, ValueError):
        return str(path.expanduser().resolve())
    return f"file {st.st_dev}:{st.st_ino}"


def _refuse_self_comparison(sources: list[Source]) -> None:
    """Refuse two sources that are one experiment (same id) of one database: its runs would
    be compared with themselves, every difference zero by construction."""
    from analysis.reading.query import experiment_info
    from core.errors import FlushbenchError

    seen: dict[tuple[str, int], Source] = {}
    for src in sources:
        try:
            exp_id = int(experiment_info(src.db, src.experiment)["id"])
        except FlushbenchError:
            continue  # compare() says what is wrong with this source, naming it
        first = seen.setdefault((database_identity(src.db), exp_id), src)
        if first is not src:
            raise AnalysisError(
                f"{first.label} and {src.label} are the same experiment (id {exp_id}) of the"
                " same database: it would be compared with itself", where="command line",
                fix="name two different experiments, or one experiment in two databases")


def _key(knobs: dict[str, Any], on: list[str]) -> str:
    return json.dumps([knobs.get(k) for k in on], sort_keys=True, default=str)


def level_text(value: Any) -> str:
    """A knob level as experiment files and cell labels write it (on/off, 60, {k=v})."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}={level_text(v)}" for k, v in sorted(value.items())) + "}"
    return "unset" if value is None else str(value)


def _key_label(knobs: dict[str, Any], on: list[str]) -> str:
    return " ".join(f"{k}={level_text(knobs.get(k))}" for k in on) or "all runs"


def _constant(rs: pd.DataFrame, knob: str) -> str | None:
    values = {json.dumps(k.get(knob), sort_keys=True, default=str) for k in rs["knobs"]}
    return next(iter(values)) if len(values) == 1 else None


def cross_compare(sources: list[Source], *, on: list[str] | None = None,
                  pairs: list[list[int]] | None = None,
                  force: bool = False) -> CrossComparison:
    """Compare experiments from several databases: match cells, block by source.

    Parameters
    ----------
    sources:
        From :func:`parse_sources`; the first is the reference the others are compared with.
    on:
        Knobs to match cells on (default: every knob that varies in any source).
    pairs:
        An explicit mapping instead: each entry one cell number (1 = the first cell, as
        ``compare`` numbers them C1, C2 …) per source, in source order.
    force:
        Compare runs within a source even when its checked metadata differ.

    Raises
    ------
    AnalysisError
        Fewer than two sources, different metrics, a knob of ``on`` no source has, two cells
        of one source with the same match values, a bad pair, or no cell in common.
    """
    if len(sources) < 2:
        raise AnalysisError("a comparison across databases needs two experiments or more",
                            where="command line", fix="name another with NAME@DATABASE")
    _refuse_self_comparison(sources)
    per = _compare_each(sources, force)
    all_knobs = {k for c in per for kn in c.frames.run_summary["knobs"] for k in (kn or {})}
    on = _match_knobs(per, on, pairs, all_knobs)
    if pairs:
        keys, key_labels = _keys_by_pairs(sources, per, pairs)
    else:
        keys, key_labels = _keys_by_knobs(sources, per, on, all_knobs)
    order = list(dict.fromkeys(k for m in keys for k in m))
    matched = [k for k in order if sum(k in m for m in keys) >= 2]
    if not matched:
        raise AnalysisError(
            f"no cell of one experiment has the {', '.join(on)} values of a cell of another",
            where="--on", fix="match on fewer knobs (--on), pair cells by hand (--pair), or"
            " compare experiments that share configurations")
    unmatched = [f"{key_labels[k]}: only in {src.label}" for k in order if k not in matched
                 for src, m in zip(sources, keys, strict=True) if k in m]
    if pairs:  # the cells no pair names
        named = [set(m.values()) for m in keys]
        unmatched = [f"{c['cell_label']}: not paired, in {src.label}"
                     for src, cmp_, ids in zip(sources, per, named, strict=True)
                     for _, c in cmp_.cells.iterrows() if int(c["cell_id"]) not in ids]
        on = []
    base_id = int(per[0].cells.loc[per[0].cells["is_baseline"], "cell_id"].iloc[0])
    base_key = next((k for k, cid in keys[0].items() if cid == base_id), "")
    warnings = []
    if base_key not in matched:
        label = per[0].cells.set_index("cell_id").loc[base_id, "cell_label"]
        warnings.append(f"the baseline of {sources[0].label} ({label}) is in no other source:"
                        " no pooled ratio to it")
    cells = _cells_table(sources, per, keys, matched, key_labels)
    pooled = _pooled(sources, per, keys, matched, key_labels, base_key)
    between = _between(sources, per, keys, matched, key_labels)
    for src, c in zip(sources, per, strict=True):
        warnings += [f"{src.label}: {w}" for w in c.warnings]
    return CrossComparison(sources=sources, per_source=per, on=on, cells=cells, pooled=pooled,
                           between=between, context=_context(sources, per, all_knobs, on),
                           unmatched=unmatched, warnings=warnings)


def _compare_each(sources: list[Source], force: bool) -> list[Comparison]:
    """Each source's own comparison (an error names its source); they must share a metric."""
    per = []
    for src in sources:
        try:
            per.append(compare(src.db, src.experiment, force=force))
        except AnalysisError as exc:
            raise AnalysisError(f"{src.label}: {exc.what}", where=exc.where,
                                fix=exc.fix) from None
    metrics = {metric_view(c.experiment).name for c in per}
    if len(metrics) > 1:
        names = ", ".join(sorted(metrics))
        raise AnalysisError(f"the experiments measure different metrics ({names})",
                            where="command line", fix="compare experiments of one workload")
    return per


def _match_knobs(per: list[Comparison], on: list[str] | None, pairs: list[list[int]] | None,
                 all_knobs: set[str]) -> list[str]:
    """The knobs cells are matched on: ``on``, else every knob that varies in any source
    (refused with ``pairs``, or naming a knob no source has)."""
    if pairs and on is not None:
        raise AnalysisError("cells are matched either by knobs (--on) or by hand (--pair)",
                            where="--on", fix="give one of the two")
    if on is None:
        on = []
        for c in per:
            on += [k for k in varying_knobs(c.frames.run_summary) if k not in on]
    unknown = [k for k in on if k not in all_knobs]
    if unknown:
        raise AnalysisError(f"no cell of any experiment sets {', '.join(unknown)}",
                            where="--on", fix=f"knobs: {', '.join(sorted(all_knobs))}")
    return on


def _context(sources: list[Source], per: list[Comparison], all_knobs: set[str],
             on: list[str]) -> dict[str, dict[str, str]]:
    """Knobs not matched on that are constant within each source but differ between them:
    knob → source label → its value in words."""
    context: dict[str, dict[str, str]] = {}
    for knob in sorted(all_knobs - set(on)):
        values = {src.label: _constant(c.frames.run_summary, knob)
                  for src, c in zip(sources, per, strict=True)}
        if None not in values.values() and len(set(values.values())) > 1:
            context[knob] = {s: level_text(json.loads(v or "null")) for s, v in values.items()}
    return context


def _keys_by_knobs(sources: list[Source], per: list[Comparison], on: list[str],
                   all_knobs: set[str]) -> tuple[list[dict[str, int]], dict[str, str]]:
    """Per source: match key (the values of ``on``) → cell id, and each key's label."""
    keys: list[dict[str, int]] = []
    key_labels: dict[str, str] = {}
    for src, c in zip(sources, per, strict=True):
        mine: dict[str, int] = {}
        for _, cell in c.cells.iterrows():
            k = _key(cell["knobs"], on)
            if k in mine:  # two cells with one key cannot be matched
                first = c.cells.set_index("cell_id").loc[mine[k], "cell_label"]
                raise AnalysisError(
                    f"{src.label}: cells {first!r} and {cell['cell_label']!r} have the same"
                    f" values of {', '.join(on) or 'every matched knob'}",
                    where="--on", fix="match on more knobs: --on "
                    + ",".join(sorted(all_knobs)) + ", or pair cells by hand (--pair)")
            mine[k] = int(cell["cell_id"])
            key_labels.setdefault(k, _key_label(cell["knobs"], on))
        keys.append(mine)
    return keys, key_labels


def _keys_by_pairs(sources: list[Source], per: list[Comparison], pairs: list[list[int]]
                   ) -> tuple[list[dict[str, int]], dict[str, str]]:
    """Per source: pair key → cell id, from cell numbers (C1 = 1) given by hand."""
    keys: list[dict[str, int]] = [{} for _ in sources]
    key_labels: dict[str, str] = {}
    for j, pair in enumerate(pairs):
        text = ":".join(str(n) for n in pair)
        if len(pair) != len(sources):
            raise AnalysisError(f"pair {text} names {len(pair)} cells for {len(sources)}"
                                " sources", where="--pair",
                                fix="one cell number per source, in source order (1:3)")
        key = f"pair {j + 1}"
        labels = []
        for i, (src, c, number) in enumerate(zip(sources, per, pair, strict=True)):
            # The numbers `compare` prints: C1 is the cell at position 0.
            hit = c.cells[c.cells["position"].astype(int) + 1 == number]
            if hit.empty:
                known = ", ".join(str(int(p) + 1) for p in sorted(c.cells["position"]))
                raise AnalysisError(f"{src.label} has no cell {number} (cells {known})",
                                    where=f"--pair {text}",
                                    fix="number cells as `compare` does: C1 = 1")
            cell_id = int(hit["cell_id"].iloc[0])
            if cell_id in keys[i].values():
                raise AnalysisError(f"cell {number} of {src.label} is in two pairs",
                                    where=f"--pair {text}", fix="pair each cell once")
            keys[i][key] = cell_id
            labels.append(str(hit["cell_label"].iloc[0]))
        key_labels[key] = " ≙ ".join(dict.fromkeys(labels))
    return keys, key_labels


def _cells_table(sources: list[Source], per: list[Comparison], keys: list[dict[str, int]],
                 matched: list[str], key_labels: dict[str, str]) -> pd.DataFrame:
    rows = []
    for i, k in enumerate(matched):
        for src, c, m in zip(sources, per, keys, strict=True):
            if k not in m:
                continue
            cell = c.cells.set_index("cell_id").loc[m[k]]
            rows.append({"key": k, "match": i + 1, "label": key_labels[k], "source": src.label,
                         "cell_label": cell["cell_label"], "is_baseline": cell["is_baseline"],
                         "n_done": int(cell["n_done"]), "mean": cell["notpm_mean"],
                         "ci_low": cell["notpm_ci_low"], "ci_high": cell["notpm_ci_high"],
                         "ratio": cell["ratio"], "ratio_ci_low": cell["ratio_ci_low"],
                         "ratio_ci_high": cell["ratio_ci_high"], "verdict": cell["verdict"],
                         "score_median": cell["score_median"]})
    return pd.DataFrame(rows)


def _combined_runs(sources: list[Source], per: list[Comparison], keys: list[dict[str, int]],
                   matched: list[str], base_key: str) -> pd.DataFrame:
    """Every source's runs of matched cells in one frame: one cell id per match, the source
    (and, within a spread source, the host) as the block in ``hostname``."""
    parts = []
    ids = {k: i + 1 for i, k in enumerate(matched)}
    for src, c, m in zip(sources, per, keys, strict=True):
        rs = c.frames.run_summary
        inverse = {cid: k for k, cid in m.items() if k in ids}
        part = rs[rs["cell_id"].isin(list(inverse))].copy()
        many_hosts = part["hostname"].nunique() > 1
        part["hostname"] = [f"{src.label} / {h}" if many_hosts else src.label
                            for h in part["hostname"]]
        part["extra"] = None  # host_of() reads the block from hostname
        part["cell_id"] = [ids[inverse[int(cid)]] for cid in part["cell_id"]]
        part["position"] = part["cell_id"] - 1
        part["is_baseline"] = [inverse_key == base_key for inverse_key in
                               (matched[cid - 1] for cid in part["cell_id"])]
        parts.append(part)
    out = pd.concat(parts, ignore_index=True)
    out.attrs["knobs"] = []
    return out


def _pooled(sources: list[Source], per: list[Comparison], keys: list[dict[str, int]],
            matched: list[str], key_labels: dict[str, str], base_key: str) -> pd.DataFrame:
    """Per matched cell: the ratio to the baseline pooled over the sources (blocks)."""
    columns = ["key", "label", "n_sources", "ratio", "ratio_ci_low", "ratio_ci_high",
               "p_value", "verdict", "verdict_reason", "heterogeneity_p"]
    if base_key not in matched:
        return pd.DataFrame(columns=columns)
    rs = _combined_runs(sources, per, keys, matched, base_key)
    cs = cell_summary(None, run_summary_df=rs)
    # The sources are the blocks (host_of: each source's runs carry its name).
    cells = compare_cells(rs, cs, blocks=host_of(rs), block_unit="source")
    from analysis.comparisons.hosts import blocked_comparison

    blocks = blocked_comparison(rs).set_index("cell_id") if len(rs) else pd.DataFrame()
    out = []
    for _, c in cells.iterrows():
        cid = int(c["cell_id"])
        k = matched[cid - 1]
        b = blocks.loc[cid] if cid in blocks.index else None
        out.append({"key": k, "label": key_labels[k],
                    "n_sources": int(b["n_hosts"]) if b is not None else len(sources),
                    "ratio": c["ratio"], "ratio_ci_low": c["ratio_ci_low"],
                    "ratio_ci_high": c["ratio_ci_high"], "p_value": c["p_value"],
                    "verdict": c["verdict"],
                    "verdict_reason": str(c["verdict_reason"]).replace("host", "source"),
                    "heterogeneity_p": b["heterogeneity_p"] if b is not None else math.nan})
    return pd.DataFrame(out, columns=columns)


def _between(sources: list[Source], per: list[Comparison], keys: list[dict[str, int]],
             matched: list[str], key_labels: dict[str, str]) -> pd.DataFrame:
    """The same cell in source k over the first source: ratio, CI, Mann-Whitney p, verdict."""
    rows = []
    first_values = _values(per[0], keys[0])
    for src, c, m in list(zip(sources, per, keys, strict=True))[1:]:
        values = _values(c, m)
        for k in matched:
            if k not in keys[0] or k not in m:
                continue
            v = verdict(first_values[k], values[k])
            rows.append({"key": k, "label": key_labels[k], "source": src.label,
                         "versus": sources[0].label, "n_first": v.n_baseline,
                         "n_other": v.n_other, "ratio": v.ratio, "ci_low": v.ci_low,
                         "ci_high": v.ci_high, "p_value": v.p_value, "verdict": v.verdict,
                         "reason": v.reason})
    return pd.DataFrame(rows)


def _values(c: Comparison, keys: dict[str, int]) -> dict[str, np.ndarray]:
    rs = c.frames.run_summary
    done = rs[(rs["status"] == RunStatus.DONE) & rs["notpm"].notna()]
    return {k: done.loc[done["cell_id"] == cid, "notpm"].to_numpy(dtype=float)
            for k, cid in keys.items()}


def sources_table(cross: CrossComparison) -> pd.DataFrame:
    """One row per source: label, experiment, database, server, hosts, runs, window."""
    from store.db import redacted

    rows = []
    for src, c in zip(cross.sources, cross.per_source, strict=True):
        win = c.experiment["window"]
        rs = c.frames.run_summary
        done = rs[rs["status"] == RunStatus.DONE]
        facts = {k: ", ".join(c.metadata.get(k, [])) or "–" for k in SOURCE_FACTS}
        rows.append({"source": src.label, "experiment": c.experiment["name"],
                     "experiment_id": c.experiment["id"],
                     "database": redacted(src.db) if src.db else "default",
                     "server": f"{facts['server_flavor']} {facts['server_version']}",
                     "hosts": facts["hostname"], "dataset": facts["dataset_key"],
                     "cells": len(c.cells), "runs_done": len(done),
                     "window": f"{win.start:g}–{win.end:g} s of {win.duration:g} s"})
    return pd.DataFrame(rows)
