"""Helpers for the migration tests: the legacy releases, snapshots by timestamp, which files of
a legacy collection have lost their bytes, its top-level files, and one flat 0.4 snapshot."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from sqlalchemy import select

from archive_pipelines.blobstore import sha256_file
from archive_pipelines.catalog.models import Snapshot
from archive_pipelines.migration import import_orphans
from archive_pipelines.storage.assembly import StorageParts
from archive_testkit.archivebox import Manifest
from archive_testkit.manifest import manifest
from tests.helpers.storage import write_tree
from tests.legacy.index_docs import v04

ALL_RELEASES = ("0.4", "0.5", "0.6", "0.7", "0.8", "0.8.2", "0.8.3", "0.9")


def snapshots(store: StorageParts) -> dict[str, Snapshot]:
    """Every snapshot by timestamp (tags loaded)."""
    with store.catalog.transaction() as tx:
        return {s.timestamp: s for s in tx.session.scalars(select(Snapshot))}


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


COLLECTION_FILES = ("index.sqlite3", "sources", "ArchiveBox.conf", "logs")


def top_level_files(root: Path) -> dict[str, str]:
    """{path: sha256} of a collection's files outside archive/ (index.sqlite3, sources, ...)."""
    found: dict[str, str] = {}
    for name in COLLECTION_FILES:
        found.update(manifest(root, name) if (root / name).is_dir() else
                     {name: sha256_file(root / name)[0]})
    return found


# One flat 0.4 snapshot folder: its URL, timestamp and files.
URL = "https://www.example.com/blog/post"
TS = "1600000000"
FLAT = {
    "index.json": json.dumps(v04(url=URL, timestamp=TS)).encode(),
    "index.html": b"<html>index</html>",
    "output.html": b"<html>dom</html>",
    "screenshot.png": b"\x89PNG screenshot",
    "headers.json": b'{"status": 200}',
    "warc/1600000000.warc.gz": b"warc bytes",
    "www.example.com/blog/post.html": b"<html>wget</html>",
    "cdn.other-host.net/jquery.js": b"jquery()",
    "notes.txt": b"a user's notes",
    "sources/list.txt": b"https://www.example.com/blog/post\n",
    "dom": b"a flat file named like an extractor folder",
}


def flat_snapshot(storage: StorageParts, files: dict[str, bytes] | None = None) -> tuple[str, Path]:
    folder = write_tree(storage.layout.archive / TS, files or FLAT)
    report = import_orphans(storage.catalog, storage.layout)
    assert report.imported == 1, report.errors
    return snapshots(storage)[TS].id, folder
