"""Storage profiles: units, presets, the experiment-file forms and their errors."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from core.errors import ConfigError
from core.experiment.storage import (
    PRESETS,
    StorageSpec,
    parse_bandwidth,
    parse_iops,
    resolve_storage,
)


def test_iops_units() -> None:
    assert parse_iops(3000) == 3000
    assert parse_iops("3000") == 3000
    assert parse_iops("3k") == 3000
    assert parse_iops("1.5K") == 1500
    for bad in ("fast", 0, "0.5", True, "-3", 1, 99, 10**21, "11000k", float("inf")):
        with pytest.raises(ValueError):
            parse_iops(bad)
    assert parse_iops(100) == 100 and parse_iops("10000k") == 10_000_000


def test_bandwidth_units() -> None:
    assert parse_bandwidth("125M") == 125 * 1024**2
    assert parse_bandwidth("125M/s") == 125 * 1024**2
    assert parse_bandwidth("1G") == 1024**3
    assert parse_bandwidth(131072000) == 131072000
    with pytest.raises(ValueError, match="below the sane range 1M/s–100G/s"):
        parse_bandwidth("1K")
    with pytest.raises(ValueError, match="below the sane range"):
        parse_bandwidth("5K/s")  # issue 19: 5 KB/s let mysqld neither flush nor stop
    with pytest.raises(ValueError, match="above the sane range"):
        parse_bandwidth("1T")
    with pytest.raises(ValueError):
        parse_bandwidth("lots")


def test_presets_and_labels() -> None:
    assert set(PRESETS) == {"unlimited", "hdd-raid10-2011", "sata-ssd", "cloud-gp3",
                            "flash-2011"}
    assert not PRESETS["unlimited"].limited
    gp3 = resolve_storage("cloud-gp3")
    assert (gp3.write_iops, gp3.write_bandwidth) == (3000, 125 * 1024**2)
    assert gp3.label() == "cloud-gp3 (r 3000 IOPS 125M/s, w 3000 IOPS 125M/s)"
    assert resolve_storage(None) is PRESETS["unlimited"]
    assert PRESETS["unlimited"].label() == "unlimited (no limits)"
    raid = PRESETS["hdd-raid10-2011"]
    assert raid.write_iops * 2 == raid.read_iops  # RAID-10: each write costs two disk writes


def test_every_preset_is_documented() -> None:
    from pathlib import Path

    table = (Path(__file__).parents[3] / "docs" / "storage.md").read_text()
    for name in PRESETS:
        assert f"| `{name}` |" in table, f"docs/storage.md's preset table lacks {name}"


def test_the_2011_flash_card_is_limited_by_bytes_first() -> None:
    flash = resolve_storage("flash-2011")
    assert flash.label() == "flash-2011 (r 2000 IOPS 13M/s, w 2000 IOPS 10M/s)"
    # At its bandwidth limit, 16 KiB pages use under half its operations, and even 8 KiB
    # writes fit: bytes bind first, so doublewrite's second copy costs in full.
    for bandwidth, iops in ((flash.write_bandwidth, flash.write_iops),
                            (flash.read_bandwidth, flash.read_iops)):
        assert bandwidth / (16 * 1024) < iops / 2 and bandwidth / (8 * 1024) < iops
    # The 2011 card (FusionIO 160 GB SLC) divided by the study's scale (500 → 10 warehouses).
    assert flash.write_bandwidth * 50 == pytest.approx(550e6, rel=0.05)
    assert flash.read_bandwidth * 50 == pytest.approx(700e6, rel=0.05)
    # A preset with one value changed, as the calibration sweep writes it.
    wider = resolve_storage({"preset": "flash-2011", "write_bandwidth": "20M"})
    assert (wider.name, wider.write_bandwidth, wider.write_iops) == (
        "flash-2011+custom", 20 * 1024**2, 2000)


def test_mapping_and_preset_override() -> None:
    spec = resolve_storage({"write_iops": "1k", "write_bandwidth": "64M"})
    assert (spec.name, spec.write_iops, spec.write_bandwidth, spec.read_iops) == (
        "custom", 1000, 64 * 1024**2, None)
    assert spec.label() == "custom (w 1000 IOPS 64M/s)"
    tuned = resolve_storage({"preset": "cloud-gp3", "write_iops": 1000})
    assert (tuned.name, tuned.write_iops, tuned.read_iops) == ("cloud-gp3+custom", 1000, 3000)
    assert tuned.as_record()["storage_write_iops"] == 1000


def test_errors_name_the_key_and_the_fix() -> None:
    with pytest.raises(ConfigError) as err:
        resolve_storage("gp3", "x.yaml: storage")
    assert "unknown storage preset 'gp3'" in str(err.value)
    assert "cloud-gp3" in err.value.fix
    with pytest.raises(ConfigError, match="storage: write_iop: unknown key .*'write_iops'"):
        resolve_storage({"write_iop": 100}, "x.yaml: storage")
    with pytest.raises(ConfigError, match="write_bandwidth"):
        resolve_storage({"write_bandwidth": "fast"}, "x.yaml: storage")
    with pytest.raises(ConfigError) as err:
        resolve_storage({"write_iops": "1x"}, "x.yaml: fixed.storage")
    # The key path once, and a fix (never "— None").
    assert str(err.value).count("storage") == 2 and "None" not in str(err.value)
    assert str(err.value).startswith("x.yaml: fixed.storage: write_iops: expected IOPS")
    with pytest.raises(ConfigError, match="empty storage mapping"):
        resolve_storage({}, "x.yaml: storage")
    with pytest.raises(ConfigError, match="write_iops: no value"):
        resolve_storage({"write_iops": None}, "x.yaml: storage")
    with pytest.raises(ConfigError, match="preset name or a mapping"):
        resolve_storage(42, "x.yaml: storage")  # type: ignore[arg-type]


def test_spec_is_frozen() -> None:
    with pytest.raises(ValidationError, match="frozen"):
        StorageSpec(write_iops=100).write_iops = 200  # type: ignore[misc]
