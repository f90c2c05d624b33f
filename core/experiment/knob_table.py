"""The knob table: every logical knob declared once.

A knob's entry says what a researcher may write (its level type: a pydantic annotation with the
range), how it is shown (a size like ``2000M`` or a plain value) and which server variables are
related (named when a flavor lacks the knob). The experiment models
(:mod:`core.experiment.knobs`) and the labels are generated from this table; the rule that turns
a value into server variables for a flavor lives with the translation
(:data:`runner.knobs.rules.KNOB_RULES`, one per knob here). Adding a knob is one entry here
plus its rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field

from core.errors import ConfigError
from core.units import parse_size


def _to_bytes(value: Any) -> int:
    try:
        return parse_size(value)
    except ValueError as exc:
        raise ValueError(str(exc)) from None


def _to_bool(value: Any) -> Any:
    # YAML 1.1 already turns on/off/yes/no into booleans; also accept the server's spellings.
    if isinstance(value, str) and value.strip().lower() in {"on", "true", "1", "yes"}:
        return True
    if isinstance(value, str) and value.strip().lower() in {"off", "false", "0", "no"}:
        return False
    if isinstance(value, int) and not isinstance(value, bool) and value in (0, 1):
        return bool(value)
    return value


Bytes = Annotated[int, BeforeValidator(_to_bytes), Field(ge=0)]
Switch = Annotated[bool, BeforeValidator(_to_bool)]
Percent = Annotated[float, Field(ge=0, le=99.999)]

Allocator = Literal["glibc", "jemalloc", "tcmalloc"]
FlushNeighbors = Literal["none", "cont", "area"]
ChangeBuffering = Literal["none", "inserts", "deletes", "changes", "purges", "all"]
AdaptiveCheckpoint = Literal[
    "none", "reflex", "estimate", "keep_average", "legacy", "high_checkpoint"
]
#: The host's transparent huge pages mode during the run (a host setting, not a variable).
ThpMode = Literal["always", "madvise", "never"]
FlushMethod = Literal[
    "fsync", "O_DSYNC", "littlesync", "nosync", "O_DIRECT", "O_DIRECT_NO_FSYNC"
]

def _storage_value(value: Any) -> Any:
    """A preset name or a mapping of limits, checked now, kept as written (it is hashed)."""
    from core.experiment.storage import resolve_storage

    try:
        resolve_storage(value)
    except ConfigError as exc:
        raise ValueError(f"{exc.what} — {exc.fix}") from None
    return value


StorageValue = Annotated[str | dict[str, Any], BeforeValidator(_storage_value)]

#: A server profile: a name in ``configs/servers`` or a path to a profile file (as the
#: top-level ``server:`` of an experiment takes it).
ServerName = Annotated[str, Field(min_length=1, max_length=255,
                                  pattern=r"^[A-Za-z0-9_./~][A-Za-z0-9_./~+-]*$")]


@dataclass(frozen=True)
class KnobDef:
    """One logical knob.

    Attributes
    ----------
    name:
        The key in experiment files (``fixed``, ``matrix``, ``include``...).
    level:
        The type of one value (pydantic annotation, range included).
    doc:
        One line for documentation and ``plan``.
    size:
        Shown as a size (``2000M``) in labels.
    related:
        Server variables to suggest when a flavor lacks the knob.
    """

    name: str
    level: Any
    doc: str
    size: bool = False
    related: tuple[str, ...] = ()


KNOBS: tuple[KnobDef, ...] = (
    # First, so that labels read "server=mysql-5.5 doublewrite=off". Resolved by preflight to
    # the binary that translates the cell's other knobs; never a my.cnf line.
    KnobDef("server", ServerName,
            "server profile that runs the cell (configs/servers/NAME.yaml or a path);"
            " default: the experiment's top-level `server`"),
    KnobDef("doublewrite", Switch, "InnoDB doublewrite buffer on/off"),
    KnobDef("max_dirty_pages_pct", Percent, "dirty-page limit, % of the buffer pool"),
    KnobDef("max_dirty_pages_pct_lwm", Percent,
            "dirty-page low-water mark where pre-flushing starts",
            related=("innodb_max_dirty_pages_pct", "innodb_adaptive_flushing")),
    KnobDef("io_capacity", Annotated[int, Field(ge=100)], "background flushing IOPS budget"),
    KnobDef("io_capacity_max", Annotated[int, Field(ge=100)],
            "IOPS budget when flushing falls behind", related=("innodb_io_capacity",)),
    KnobDef("log_file_size", Annotated[Bytes, Field(ge=1024 * 1024)],
            "total redo log size (all files)", size=True),
    KnobDef("flush_neighbor_pages", FlushNeighbors,
            "flush neighbours of a page: none, cont(iguous) or area",
            related=("innodb_flush_neighbors",)),
    KnobDef("change_buffering", ChangeBuffering,
            "what InnoDB buffers in its change buffer: none, inserts, deletes, changes,"
            " purges or all (absent from MariaDB 11.0)",
            related=("innodb_change_buffer_max_size",)),
    KnobDef("adaptive_flushing", Switch, "adaptive flushing on/off"),
    KnobDef("adaptive_checkpoint", AdaptiveCheckpoint, "Percona's checkpoint-age control",
            related=("innodb_adaptive_flushing", "innodb_adaptive_flushing_lwm",
                     "innodb_max_dirty_pages_pct_lwm", "innodb_flushing_avg_loops")),
    KnobDef("buffer_pool_size", Annotated[Bytes, Field(ge=5 * 1024 * 1024)],
            "buffer pool size", size=True),
    KnobDef("buffer_pool_instances", Annotated[int, Field(ge=1, le=64)],
            "buffer pool instances",
            related=("innodb_buffer_pool_size", "innodb_buffer_pool_chunk_size")),
    KnobDef("flush_log_at_trx_commit", Literal[0, 1, 2], "redo flush at commit: 0, 1 or 2"),
    KnobDef("flush_method", FlushMethod, "how InnoDB opens and syncs files"),
    KnobDef("allocator", Allocator,
            "malloc of mysqld: glibc, jemalloc or tcmalloc (LD_PRELOAD)"),
    KnobDef("large_pages", Switch, "buffer pool in huge pages"),
    KnobDef("transparent_hugepages", ThpMode,
            "host THP mode while mysqld runs: always, madvise or never (needs root)"),
    KnobDef("connections", Annotated[int, Field(ge=1, le=100000)],
            "client connections of the workload driver"),
    KnobDef("rate", Annotated[float, Field(gt=0, le=10_000_000, allow_inf_nan=False)],
            "fixed rate of the Go tpcc driver, New-Orders a minute (workload.rate as an axis;"
            " docs/tpcc.md, \"Fixed rate\")"),
    KnobDef("storage", StorageValue,
            "emulated storage: a preset (cloud-gp3, hdd-raid10-2011, sata-ssd, unlimited) or"
            " {read_iops, write_iops, read_bandwidth, write_bandwidth} (docs/storage.md)"),
)

#: Knob names in display order (raw ``variables`` come after them).
KNOB_NAMES: tuple[str, ...] = tuple(k.name for k in KNOBS)
#: Knob name → its definition.
KNOB_BY_NAME: dict[str, KnobDef] = {k.name: k for k in KNOBS}
#: Knobs measured in bytes: printed back as ``2000M`` in labels.
SIZE_KNOBS = frozenset(k.name for k in KNOBS if k.size)
#: Knob → server variables worth naming when a flavor lacks it.
RELATED = {k.name: k.related for k in KNOBS if k.related}
