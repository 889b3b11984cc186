from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from archive_pipelines.legacy.versions import (
    CAS,
    FS_VERSIONS,
    ORGANIZED,
    detect_version,
    migration_chain,
    migration_steps,
    needs_fs_migration,
    output_dir,
    version_after,
)
from archive_pipelines.views import SnapshotPlace, view_dir

pytestmark = pytest.mark.unit

HISTORY = {"wget": [{"status": "succeeded", "output": "example.com/index.html"}]}
BASE = {"url": "https://example.com/", "timestamp": "1600000000", "history": HISTORY}


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ({"updated": "2020-09-13T12:26:40"}, "0.4"),  # 0.4.x-0.5.x
        ({}, "0.4"),  # no fingerprint at all: the oldest flat layout
        ({"updated": None, "snapshot_id": "5f1c...", "tags_str": "a"}, "0.6"),
        ({"updated": None, "icons": None}, "0.6"),
        ({"updated": "x", "snapshot_id": "u", "tags_str": "", "snapshot_abid": "snp_01"}, "0.8"),
        ({"downloaded_at": None, "snapshot_id": "u", "snapshot_abid": "snp_01"}, "0.8.3"),
        ({"downloaded_at": "2024-01-01T00:00:00+00:00"}, "0.8.3"),
        ({"archive_results": [], "fs_version": "0.9.0"}, "0.9"),
        ({"archive_results": []}, "0.9"),
        ({"fs_version": "0.9.0"}, "0.9"),
        ({"fs_version": "organized"}, ORGANIZED),
        ({"fs_version": "cas", "downloaded_at": None}, CAS),
    ],
)
def test_detect_version_by_fingerprint(extra: dict[str, Any], expected: str) -> None:
    assert detect_version({**BASE, **extra}) == expected


def test_real_08_folder_with_history_is_not_labelled_07() -> None:
    # A `history` key alone does not mean 0.7: 0.8.2+ folders have `history` too.
    index = {**BASE, "snapshot_id": "u", "tags_str": "", "icons": None, "snapshot_abid": "snp_1"}
    assert "history" in index
    assert detect_version(index) == "0.8"
    assert detect_version({**index, "downloaded_at": None}) == "0.8.3"


def test_chain_has_one_real_step_from_any_legacy_version() -> None:
    # Files are stored at the paths they have: no per-extractor regrouping on disk.
    for legacy in ("0.4", "0.6", "0.8", "0.8.3", "0.9"):
        assert migration_chain(legacy) == ["to_cas"]
    assert migration_chain(ORGANIZED) == ["to_cas"]
    assert migration_chain(CAS) == []
    steps = migration_steps("0.4")
    assert [s.source for s in steps] == list(FS_VERSIONS[:-1])
    assert [s.target for s in steps] == list(FS_VERSIONS[1:])
    assert sum(not s.is_noop for s in steps) == 1


def test_version_after_each_step() -> None:
    assert version_after("to_cas") == CAS
    with pytest.raises(ValueError):
        version_after("organize")  # removed: a move of original files before they are stored
    with pytest.raises(ValueError):
        version_after("noop")


@pytest.mark.parametrize("version", [v for v in FS_VERSIONS if v != CAS])
def test_everything_but_cas_needs_migration(version: str) -> None:
    assert needs_fs_migration(version)


def test_cas_needs_nothing_and_unknown_versions_are_refused() -> None:
    assert not needs_fs_migration(CAS)
    with pytest.raises(ValueError, match="unknown fs_version"):
        needs_fs_migration("0.7.0")
    with pytest.raises(ValueError):
        migration_chain("1.0")


def place(timestamp: str, *, owner: bool = True) -> SnapshotPlace:
    return SnapshotPlace(snapshot_id="0123abcd-5678-4000-8000-000000000000", url="https://example.com/",
                         timestamp=timestamp, created_at=datetime(2020, 9, 13, tzinfo=UTC),
                         created_by="system", owns_timestamp=owner)


def test_output_dir_per_version(tmp_path: Path) -> None:
    assert output_dir(tmp_path, place("1600000000.5"), "0.4") == tmp_path / "archive" / "1600000000.5"
    assert output_dir(tmp_path, place("1600000000"), ORGANIZED) == tmp_path / "archive" / "1600000000"
    assert output_dir(tmp_path, place("1600000000"), CAS) == tmp_path / "archive/by_timestamp/1600000000"


def test_output_dir_of_a_snapshot_that_does_not_own_its_timestamp(tmp_path: Path) -> None:
    other = place("1600000000", owner=False)
    # The same path the views give it; the legacy folder is the one folder of that timestamp.
    assert output_dir(tmp_path, other, CAS) == tmp_path / "archive" / view_dir("by_timestamp", other)
    assert output_dir(tmp_path, other, CAS) == tmp_path / "archive/by_timestamp/1600000000__0123abcd"
    assert output_dir(tmp_path, other, ORGANIZED) == tmp_path / "archive" / "1600000000"


@pytest.mark.parametrize("timestamp", ["", "..", "../1600000000", "16/00", "1600000000\x00", "abc"])
def test_output_dir_refuses_timestamps_that_are_not_one_folder(tmp_path: Path, timestamp: str) -> None:
    with pytest.raises(ValueError):
        output_dir(tmp_path, place(timestamp), "0.4")
