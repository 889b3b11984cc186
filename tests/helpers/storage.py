"""Helpers for tests on the storage parts: snapshots, file trees on disk and their hashes, and
the blobs a catalog records present."""

from __future__ import annotations

import hashlib
import os
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import select

from archive_pipelines.catalog import Catalog, make_engine
from archive_pipelines.catalog.models import Blob, BlobCopy, Store
from archive_pipelines.storage.assembly import StorageParts


def add_snapshot(storage: StorageParts, url: str = "https://example.com/page",
                 timestamp: str = "1735142400.1", user: str = "squash",
                 day: datetime | None = None) -> str:
    return Catalog(storage.catalog.engine).snapshots.add_snapshot(
        url=url, timestamp=timestamp, created_by=user,
        created_at=day or datetime(2024, 12, 25, 12, tzinfo=UTC)).id


def write_tree(root: Path, files: dict[str, bytes]) -> Path:
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return root


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def store_bytes(storage: StorageParts) -> int:
    """Bytes the primary store occupies: each inode once (aliases are hard links)."""
    sizes: dict[tuple[int, int], int] = {}
    for dirpath, _dirs, files in os.walk(storage.primary.root):
        for name in files:
            st = os.lstat(os.path.join(dirpath, name))
            sizes[(st.st_dev, st.st_ino)] = st.st_size
    return sum(sizes.values())


def recorded_present(catalog_url: str) -> dict[str, int]:
    """{sha256: size} of the blobs the catalog records present at the primary store."""
    engine = make_engine(catalog_url)
    try:
        with engine.connect() as connection:
            rows = connection.execute(
                select(Blob.sha256, Blob.size).join(BlobCopy, BlobCopy.blob_id == Blob.id)
                .join(Store, Store.id == BlobCopy.store_id)
                .where(Store.name == "primary", BlobCopy.status == "present"))
            return {sha256: size for sha256, size in rows}
    finally:
        engine.dispose()
