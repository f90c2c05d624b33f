"""Storage profiles: the read/write IOPS and bandwidth limits that emulate a class of disk.

A profile is applied to mysqld's I/O on the datadir's block device by the kernel's cgroup I/O
throttle (:mod:`runner.host.cgroups`). Every limit is optional; a profile without any limit
(``unlimited``) means "the machine's own disk". The presets and where their figures come from
are documented in ``docs/storage.md``.

Units: IOPS are plain numbers (``3000``, ``3k``); bandwidths are bytes per second written as
sizes (``125M`` = 125 MiB/s, ``1G``), with the 1024-based units of :mod:`core.units`
(the same as my.cnf sizes, and the unit cloud providers quote: gp3's baseline is 125 MiB/s).
Both have a sane range (:data:`MIN_IOPS`…; docs/storage.md says why), checked at validate time.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, ValidationError

from core.errors import ConfigError, quote
from core.units import format_size, in_range, parse_count, parse_size
from core.validation import StrictModel, error_location, problem_message

#: The sane ranges of a limit, checked when the experiment is validated (docs/storage.md,
#: "Ranges"). Below the minimum mysqld cannot even start and stop in reasonable time (it
#: writes its redo log, doublewrite buffer and every dirty page on shutdown: a 128M buffer
#: pool of dirty pages is 8,192 page writes, 80 s at 100 IOPS); above the maximum no real
#: device is that fast, so the value is a typo (10^21 overflows the kernel's 64-bit field).
MIN_IOPS = 100
MAX_IOPS = 10_000_000
MIN_BANDWIDTH = 1024 * 1024
MAX_BANDWIDTH = 100 * 1024**3
_IOPS_WHY = (f"a single 7,200 rpm disk does about 100 random IOPS, and below {MIN_IOPS} mysqld"
             " cannot flush its buffer pool and stop within minutes; no device does more than"
             f" {MAX_IOPS:,} (a PCIe 5 NVMe does about 2,000,000)")
_BW_WHY = ("below 1M/s mysqld's own start and shutdown writes (redo, doublewrite, dirty pages)"
           " take many minutes; no single device moves more than 100G/s (a PCIe 5 NVMe moves"
           " about 14 GB/s)")


def parse_iops(value: Any) -> int:
    """Parse an IOPS figure: ``3000``, ``"3000"``, ``"3k"`` or ``"1.5k"`` (k = 1000).

    Raises
    ------
    ValueError
        If the value is not a whole number of operations per second in the sane range
        :data:`MIN_IOPS`–:data:`MAX_IOPS` (with why).
    """
    number = parse_count(value, "IOPS")
    return int(in_range(number, MIN_IOPS, MAX_IOPS, what="IOPS", why=_IOPS_WHY))


def parse_bandwidth(value: Any) -> int:
    """Parse a bandwidth in bytes per second: ``"125M"`` (MiB/s), ``"1G"``, ``131072000``.

    A trailing ``/s`` is accepted (``"125M/s"``).

    Raises
    ------
    ValueError
        If the value is not a size in the sane range 1M/s–100G/s (with why).
    """
    if isinstance(value, str) and value.strip().lower().endswith("/s"):
        value = value.strip()[:-2]
    result = parse_size(value)
    return int(in_range(result, MIN_BANDWIDTH, MAX_BANDWIDTH, what="bandwidth",
                        show=lambda n: f"{format_size(n)}/s", why=_BW_WHY))


def _iops(value: Any) -> Any:
    return None if value is None else parse_iops(value)


def _bandwidth(value: Any) -> Any:
    return None if value is None else parse_bandwidth(value)


# The range applies to the number; None ("not limited") passes the parser untouched.
Iops = Annotated[Annotated[int, Field(ge=MIN_IOPS, le=MAX_IOPS)] | None,
                 BeforeValidator(_iops)]
Bandwidth = Annotated[Annotated[int, Field(ge=MIN_BANDWIDTH, le=MAX_BANDWIDTH)] | None,
                      BeforeValidator(_bandwidth)]


class StorageSpec(StrictModel):
    """Limits on mysqld's I/O to the datadir's device; ``None`` means "not limited".

    Attributes
    ----------
    name:
        The preset name, or ``custom`` for a hand-written profile.
    read_iops, write_iops:
        Read/write operations per second (as the kernel counts them: one per bio after
        splitting, so a 1 MiB write is one operation unless the device splits it).
    read_bandwidth, write_bandwidth:
        Bytes per second.
    """

    name: str = "custom"
    read_iops: Iops = None
    write_iops: Iops = None
    read_bandwidth: Bandwidth = None
    write_bandwidth: Bandwidth = None

    @property
    def limited(self) -> bool:
        """True when at least one limit is set (a throttle group is needed)."""
        return any(
            v is not None
            for v in (self.read_iops, self.write_iops, self.read_bandwidth, self.write_bandwidth)
        )

    def label(self) -> str:
        """A short human description: ``cloud-gp3 (r 3000 IOPS 125M/s, w 3000 IOPS 125M/s)``."""
        if not self.limited:
            return f"{self.name} (no limits)"

        def side(tag: str, iops: int | None, bw: int | None) -> str:
            parts = [f"{iops} IOPS" if iops is not None else "", (
                f"{format_size(bw)}/s" if bw is not None else "")]
            text = " ".join(p for p in parts if p)
            return f"{tag} {text}" if text else ""

        sides = [
            side("r", self.read_iops, self.read_bandwidth),
            side("w", self.write_iops, self.write_bandwidth),
        ]
        return f"{self.name} ({', '.join(s for s in sides if s)})"

    def as_record(self) -> dict[str, Any]:
        """The limits as a flat dict for run metadata (``storage_write_iops``...)."""
        return {
            "storage_profile": self.name,
            "storage_read_iops": self.read_iops,
            "storage_write_iops": self.write_iops,
            "storage_read_bandwidth": self.read_bandwidth,
            "storage_write_bandwidth": self.write_bandwidth,
        }


_MiB = 1024 * 1024
#: The 2011 study's scale: 500 warehouses on the post's box → 10 here (docs/storage.md).
FLASH_2011_SCALE = 50
FLASH_2011_IOPS = 100_000 // FLASH_2011_SCALE

#: Named profiles; the derivation of every figure is in docs/storage.md.
PRESETS: dict[str, StorageSpec] = {
    "unlimited": StorageSpec(name="unlimited"),
    # 8 x 15k rpm SAS disks in RAID-10, no controller write cache: ~180 random IOPS per
    # disk; reads can be served by either mirror (8 x 180), each write costs two disk
    # writes (8 x 180 / 2); ~150 MiB/s sequential per disk, 4 stripes.
    "hdd-raid10-2011": StorageSpec(
        name="hdd-raid10-2011",
        read_iops=1440,
        write_iops=720,
        read_bandwidth=600 * _MiB,
        write_bandwidth=600 * _MiB,
    ),
    # Intel SSD 320 (2011, SATA 3 Gb/s, 300/600 GB) product specification: 4 KiB random reads
    # up to 39,500 IOPS, writes up to 23,000 IOPS (QD 32); sequential 270/220 MB/s.
    "sata-ssd": StorageSpec(
        name="sata-ssd",
        read_iops=39500,
        write_iops=23000,
        read_bandwidth=257 * _MiB,  # 270 MB/s
        write_bandwidth=209 * _MiB,  # 220 MB/s
    ),
    # AWS EBS gp3 baseline (what every gp3 volume gets without paying for more).
    "cloud-gp3": StorageSpec(
        name="cloud-gp3",
        read_iops=3000,
        write_iops=3000,
        read_bandwidth=125 * _MiB,
        write_bandwidth=125 * _MiB,
    ),
    # The 2011 "in search of stability" post's FusionIO ioDrive 160 GB SLC (≈ 700 MB/s read,
    # 500-600 MB/s write, > 100,000 random 4 KB operations/s), every figure divided by 50 —
    # the factor the study scales its data, buffer pool and redo by (500 → 10 warehouses), so
    # writing the whole buffer pool or redo takes as long as it did on the post's box. The
    # operations (one per 5.5 KB of bandwidth) stay far from binding for 16 KiB pages: the
    # budget is bytes, and doublewrite's second copy of every page costs in full.
    "flash-2011": StorageSpec(
        name="flash-2011",
        read_iops=FLASH_2011_IOPS,
        write_iops=FLASH_2011_IOPS,
        # 700 MB/s / 50 = 14 MB/s and 550 MB/s / 50 = 11 MB/s, in whole MiB/s (13.6 and
        # 10.5 MB/s: 680 and 524 MB/s on the card, inside its data sheet's figures).
        read_bandwidth=13 * _MiB,
        write_bandwidth=10 * _MiB,
    ),
}


def preset_names() -> list[str]:
    """The preset names, in definition order."""
    return list(PRESETS)


def resolve_storage(value: str | Mapping[str, Any] | StorageSpec | None,
                    where: str = "storage") -> StorageSpec:
    """Turn an experiment's ``storage:`` value into a :class:`StorageSpec`.

    Parameters
    ----------
    value:
        A preset name (``cloud-gp3``), a mapping of limits (``{write_iops: 1000}``,
        optionally with ``preset: NAME`` whose limits the other keys override), a
        StorageSpec, or None (``unlimited``).
    where:
        File and key path for error messages (``experiments/x.yaml: storage``).

    Raises
    ------
    ConfigError
        On an unknown preset, an unknown key or a malformed number, with the fix.
    """
    if value is None:
        return PRESETS["unlimited"]
    if isinstance(value, StorageSpec):
        return value
    if isinstance(value, str):
        name = value.strip()
        if name not in PRESETS:
            raise ConfigError(
                f"unknown storage preset {quote(name)}",
                where,
                "use one of " + ", ".join(PRESETS) + " or a mapping such as "
                "{write_iops: 1000, write_bandwidth: 125M}",
            )
        return PRESETS[name]
    if isinstance(value, Mapping):
        data = dict(value)
        if not data:
            raise ConfigError("an empty storage mapping sets no limit", where,
                              "write `storage: unlimited` for the machine's own disk, or give"
                              " limits such as {write_iops: 1000}")
        empty = sorted(str(k) for k, v in data.items() if v is None)
        if empty:
            raise ConfigError(f"{empty[0]}: no value", where,
                              "give a value (e.g. write_iops: 1000) or remove the key")
        preset = data.pop("preset", None)
        base: dict[str, Any] = {}
        if preset is not None:
            base = resolve_storage(str(preset), f"{where}.preset").model_dump()
            base["name"] = f"{preset}+custom" if data else str(preset)
        base.update(data)
        try:
            return StorageSpec.model_validate(base)
        except ValidationError as exc:
            # One problem, said once: its key inside the mapping and the message; `where` is
            # the mapping's own place (a caller that adds its own location gets no doubling).
            err = exc.errors()[0]
            raise ConfigError(f"{error_location(err)}: {problem_message(err)}",
                              where, _STORAGE_FIX) from None
    raise ConfigError(
        f"must be a preset name or a mapping of limits, got {quote(value)}",
        where,
        "write e.g. `storage: cloud-gp3` or `storage: {write_iops: 1000}`",
    )


_STORAGE_FIX = ("see docs/storage.md: IOPS 100–10,000,000 (3000 or 3k), bandwidths 1M/s–100G/s"
                " (125M = 125 MiB/s)")
