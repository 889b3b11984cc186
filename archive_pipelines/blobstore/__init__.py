"""Content-addressed blob stores: local directories and S3 buckets, raw or zstd.

Plain Python (no Dagster): identity is the SHA-256 of the raw bytes whatever the codec, and
every read, write and check streams in chunks.
"""

from archive_pipelines.blobstore.base import BlobStore
from archive_pipelines.blobstore.blob_results import CheckResult, PutResult
from archive_pipelines.blobstore.factory import open_store
from archive_pipelines.blobstore.hashing import sha256_file
from archive_pipelines.blobstore.local import LocalBlobStore
from archive_pipelines.blobstore.store_errors import (
    BlobIntegrityError,
    BlobNotFound,
    BlobStoreError,
    StoreNotWritable,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from archive_pipelines.blobstore.s3 import S3BlobStore


def __getattr__(name: str) -> object:
    # boto3 takes ~0.35 s to import: only programs that use S3 pay for it.
    if name == "S3BlobStore":
        from archive_pipelines.blobstore.s3 import S3BlobStore

        return S3BlobStore
    raise AttributeError(name)


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
