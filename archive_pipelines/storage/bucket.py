"""The S3 store of an S3 primary, for the passes that list or move its objects."""

from __future__ import annotations

from typing import TYPE_CHECKING

from archive_pipelines.storage.primary import PrimaryStore

if TYPE_CHECKING:
    from archive_pipelines.blobstore.s3 import S3BlobStore


def bucket_of(primary: PrimaryStore) -> S3BlobStore:
    """The primary's S3 store; TypeError for any other kind."""
    from archive_pipelines.blobstore.s3 import S3BlobStore  # boto3 only when S3 is used

    store = primary.store
    if not isinstance(store, S3BlobStore):
        raise TypeError(f"store {store.name!r} is not in an S3 bucket")
    return store
