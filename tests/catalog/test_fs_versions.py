"""Every write of snapshot.fs_version must use a known label (FS_VERSIONS or `0.x`)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from archive_pipelines.catalog import (
    WRITABLE_FS_VERSIONS,
    Catalog,
    CatalogTransaction,
    UnknownFsVersionError,
)
from archive_pipelines.catalog.models import Snapshot, new_id, utcnow
from archive_pipelines.legacy.versions import FS_VERSIONS


@pytest.mark.unit
def test_the_writable_labels_are_the_fs_versions_and_no_folder() -> None:
    assert {*FS_VERSIONS, "0.x"} == WRITABLE_FS_VERSIONS
    assert "legacy" not in WRITABLE_FS_VERSIONS


WRITES: dict[str, Callable[[Session, str, str], object]] = {
    "update_snapshot": lambda s, sid, label: CatalogTransaction(s).adoption.update_snapshot(
        sid, fs_version=label),
    "advance_fs_version": lambda s, sid, label: CatalogTransaction(s).adoption.advance_fs_version(
        [sid], "0.4", label),
    "insert_snapshots": lambda s, _sid, label: CatalogTransaction(s).adoption.insert_snapshots([{
        "id": new_id(), "url": "u", "timestamp": "1", "created_by": "x", "fs_version": label,
        "created_at": utcnow(), "updated_at": utcnow()}]),
    "orm attribute": lambda s, sid, label: setattr(s.get(Snapshot, sid), "fs_version", label),
}


@pytest.mark.parametrize("write", list(WRITES))
@pytest.mark.parametrize("label", ["legacy", "cas "])
def test_unknown_labels_are_refused_on_every_write_path(catalog: Catalog, write: str,
                                                        label: str) -> None:
    sid = catalog.snapshots.add_snapshot(url="u", timestamp="1600000000", fs_version="0.4").id
    with pytest.raises(UnknownFsVersionError), catalog.session() as session:
        WRITES[write](session, sid, label)
    with catalog.transaction() as tx:
        assert tx.session.scalars(select(Snapshot.fs_version)).all() == ["0.4"]  # rolled back


def test_add_snapshot_refuses_an_unknown_label_and_takes_known_ones(catalog: Catalog) -> None:
    with pytest.raises(UnknownFsVersionError):
        catalog.snapshots.add_snapshot(url="u", timestamp="1600000000", fs_version="legacy")
    for label in sorted(WRITABLE_FS_VERSIONS):
        snapshot = catalog.snapshots.add_snapshot(url="u", timestamp="1600000000", fs_version=label)
        assert snapshot.fs_version == label
