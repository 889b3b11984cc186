"""The ingest crash tests' shared parts: the files they ingest and the catalog state they compare."""

from __future__ import annotations

import os
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from archive_pipelines.blobstore.local_files import is_temp_name
from archive_pipelines.catalog import CatalogTransaction
from archive_pipelines.catalog.models import Blob, Snapshot, SnapshotFile
from archive_pipelines.settings import Settings
from archive_pipelines.storage.assembly import open_storage

ROOT = Path(__file__).resolve().parents[2]
FILES = {f"d{i % 3}/f{i}.txt": f"file {i}\n".encode() * (50 * i + 1) for i in range(12)}
FILES["d0/same-as-f1.txt"] = FILES["d1/f1.txt"]  # a duplicate: one blob, two references


def catalog_state(data_dir: Path) -> tuple[list[tuple[str | None, int]], dict[str, str],
                                            dict[str, int]]:
    """(each snapshot's (completed?, file count)), the files of the complete one (path ->
    sha256), every blob's ref_count; and checks that ref counts are exact."""
    with open_storage(Settings(data_dir=data_dir)) as parts, \
            parts.catalog.read_session() as session:
        snapshots = [(None if done is None else "complete",
                      len(session.scalars(select(SnapshotFile.id)
                                          .where(SnapshotFile.snapshot_id == sid)).all()))
                     for sid, done in session.execute(select(Snapshot.id, Snapshot.completed_at))]
        files, blobs = complete_files_and_ref_counts(session)
    parts.catalog.engine.dispose()
    return snapshots, files, blobs


def complete_files_and_ref_counts(session: Session) -> tuple[dict[str, str], dict[str, int]]:
    """The complete snapshots' files (path -> sha256) and every blob's ref_count; checks that
    the ref counts are exact."""
    files = dict(session.execute(
        select(SnapshotFile.relative_path, Blob.sha256)
        .join(Blob, Blob.id == SnapshotFile.blob_id)
        .join(Snapshot, Snapshot.id == SnapshotFile.snapshot_id)
        .where(Snapshot.completed_at.is_not(None))).all())
    blobs = dict(session.execute(select(Blob.sha256, Blob.ref_count)).all())
    assert list(CatalogTransaction(session).blobs.count_references()) == []
    return files, blobs


def store_files(data_dir: Path) -> dict[str, int]:
    """Blob files and their aliases (path -> size); not the writers' temp files."""
    found = {}
    for dirpath, _dirs, names in os.walk(data_dir / "cas"):
        for name in names:
            relative = Path(dirpath, name).relative_to(data_dir).as_posix()
            if not relative.startswith("cas/tmp/") and not is_temp_name(name):
                found[relative] = Path(dirpath, name).lstat().st_size
    return found
