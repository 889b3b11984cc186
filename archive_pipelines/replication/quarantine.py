"""Setting a corrupt object aside, so the director can copy the blob there again.

Replication never overwrites what a store holds under a blob's key, and never deletes. A
scrub that finds a corrupt object moves it out of the way instead, into `quarantine/`
inside the store (a local rename; at S3 a server-side copy, then the original key is
deleted): the bytes are kept for a person to look at, and the key is free for a good copy.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime

from archive_pipelines.blobstore import BlobStore, LocalBlobStore
from archive_pipelines.blobstore.local_files import fsync_dir

QUARANTINE = "quarantine"


def can_set_aside(store: BlobStore) -> bool:
    """Whether `set_aside` works on this store (a writable local directory or S3 bucket)."""
    from archive_pipelines.blobstore.s3 import S3BlobStore  # boto3 only when S3 is used

    return isinstance(store, LocalBlobStore | S3BlobStore) and store.writable


def set_aside(store: BlobStore, sha256: str) -> str | None:
    """Move a blob's object to `quarantine/<name>.<UTC time>` inside the store.

    Returns the new path relative to the store, or None if there was nothing to move.
    Raises OSError if the move fails (the object then stays where it was).
    """
    from archive_pipelines.blobstore.s3 import S3BlobStore  # boto3 only when S3 is used

    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    if isinstance(store, S3BlobStore):
        return store.set_aside(sha256, stamp)
    if not isinstance(store, LocalBlobStore):
        raise ValueError(f"store {store.name!r}: cannot set objects aside")
    source = store.local_path(sha256)
    folder = store.root / QUARANTINE
    folder.mkdir(exist_ok=True)
    target = folder / f"{source.name}.{stamp}"
    try:
        os.rename(source, target)
    except FileNotFoundError:
        return None  # gone meanwhile
    fsync_dir(folder)
    fsync_dir(source.parent)
    return f"{QUARANTINE}/{target.name}"
