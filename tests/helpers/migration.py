"""Helpers for the migration tests: the legacy releases, snapshots by timestamp, and which
files of a legacy collection have lost their bytes."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from sqlalchemy import select

from archive_pipelines.catalog.models import Snapshot
from archive_pipelines.storage.assembly import StorageParts
from archive_testkit.archivebox import Manifest

ALL_RELEASES = ("0.4", "0.5", "0.6", "0.7", "0.8", "0.8.2", "0.8.3", "0.9")


def snapshots(store: StorageParts) -> dict[str, Snapshot]:
    """Every snapshot by timestamp (tags loaded)."""
    with store.catalog.session() as session:
        return {s.timestamp: s for s in session.scalars(select(Snapshot))}


def tree_hashes(root: Path) -> dict[str, str]:
    """sha256 of every regular file under `root` (symlinks not followed), by relative path."""
    found = {}
    for directory, _dirs, names in os.walk(root):
        for name in names:
            path = os.path.join(directory, name)
            if os.path.isfile(path) and not os.path.islink(path):
                with open(path, "rb") as handle:
                    found[os.path.relpath(path, root)] = hashlib.file_digest(handle, "sha256").hexdigest()
    return found


def lost_bytes(store: StorageParts, manifest: Manifest, extra_roots: tuple[Path, ...] = ()) -> list[str]:
    """Manifest files whose bytes are nowhere: not a blob of the store, not a file under
    archive/ (any path: flat or organized) nor under `extra_roots`."""
    on_disk: set[str] = set()
    for root in (store.layout.archive, *extra_roots):
        on_disk.update(tree_hashes(root).values())
    lost = []
    for rel, entry in manifest.files.items():
        if rel == "index.sqlite3" or entry.sha256 in on_disk:
            continue
        blob = store.primary.store.local_path(entry.sha256)
        if blob.is_file():
            with open(blob, "rb") as handle:
                if hashlib.file_digest(handle, "sha256").hexdigest() == entry.sha256:
                    continue
        lost.append(rel)
    return lost
