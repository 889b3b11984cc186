"""Content-addressed blob stores: local directories and S3 buckets, raw or zstd.

Plain Python (no Dagster): identity is the SHA-256 of the raw bytes whatever the codec, and
every read, write and check streams in chunks.
"""

from archive_pipelines.blobstore.base import BlobStore
from archive_pipelines.blobstore.errors import (
    BlobIntegrityError,
    BlobNotFound,
    BlobStoreError,
    StoreNotWritable,
)
from archive_pipelines.blobstore.factory import open_store
from archive_pipelines.blobstore.hashing import sha256_file
from archive_pipelines.blobstore.local import LocalBlobStore
from archive_pipelines.blobstore.results import CheckResult, PutResult
from archive_pipelines.blobstore.s3 import S3BlobStore

__all__ = [
    "BlobIntegrityError",
    "BlobNotFound",
    "BlobStore",
    "BlobStoreError",
    "CheckResult",
    "LocalBlobStore",
    "PutResult",
    "S3BlobStore",
    "StoreNotWritable",
    "open_store",
    "sha256_file",
]
