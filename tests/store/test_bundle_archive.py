"""The bundle reader's own promises: a bomb is refused after reading its headers only (the
stream is never decompressed whole), long legitimate paths pass the header cap, and the
writer never writes a manifest the reader would refuse."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.errors import StoreError
from store import bundle_archive
from store.bundle_archive import inspect_archive
from store.bundles import open_bundle, write_archive
from tests.cli.test_bundle_safety import HEAD_DB, bomb, bundle, manifest, study_files


def test_a_bomb_is_refused_after_its_headers_only(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """3 GiB declared: refused having decompressed about a tar record, not gigabytes."""
    path = bomb(tmp_path / "bomb.tar.zst")
    seen: list[int] = []
    original = bundle_archive._CappedStream.read

    def counting(self: bundle_archive._CappedStream, size: int = -1) -> bytes:
        data = original(self, size)
        seen.append(len(data))
        return data

    monkeypatch.setattr(bundle_archive._CappedStream, "read", counting)
    with path.open("rb") as handle, pytest.raises(StoreError, match="over the 1 GiB"):
        inspect_archive(handle, "zst", str(path))
    assert 0 < sum(seen) < 1024**2


def test_long_paths_pass_the_header_cap(tmp_path: Path) -> None:
    """A report figure nested deep with long names (pax headers) is a legitimate member."""
    deep = "/".join(["f" * 200] * 10) + "/figure.png"
    files = {**study_files(), deep: b"png"}
    opened = open_bundle(bundle(tmp_path / "deep.tar.zst", files=files), tmp_path / "o")
    assert (opened.folder / deep).read_bytes() == b"png"


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "made" / "study"
    folder.mkdir(parents=True)
    for name, body in study_files().items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(body)
    return folder


def test_written_bundle_opens(tmp_path: Path) -> None:
    fields = json.loads(manifest(study_files(), HEAD_DB))
    fields.pop("files")
    target = write_archive(_folder(tmp_path), tmp_path / "study.tar.gz", fields)
    opened = open_bundle(target, tmp_path / "o")
    assert opened.manifest.experiment.name == "study-short"
    assert (opened.folder / "results.sqlite").read_bytes() == HEAD_DB.read_bytes()


def test_writer_refuses_a_manifest_the_reader_would_refuse(tmp_path: Path) -> None:
    fields = json.loads(manifest(study_files(), HEAD_DB))
    del fields["files"], fields["made_at"]
    target = tmp_path / "study.tar.zst"
    with pytest.raises(StoreError, match="invalid at made_at: required key is missing"):
        write_archive(_folder(tmp_path), target, fields)
    assert not target.exists() and not list(tmp_path.glob(".study*"))
