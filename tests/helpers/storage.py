"""Helpers for tests on the storage parts: snapshots, file trees on disk and their hashes."""

from __future__ import annotations

import hashlib
import os
from datetime import UTC, datetime
from pathlib import Path

from archive_pipelines.catalog import Catalog
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
