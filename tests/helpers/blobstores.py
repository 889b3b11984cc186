"""The blob store kinds the store tests run on, and the type of the fixture that makes one."""

from __future__ import annotations

from collections.abc import Callable

from archive_pipelines.blobstore import BlobStore

STORE_KINDS = ["local-raw", "local-zstd", "s3-raw", "s3-zstd"]
MakeStore = Callable[..., BlobStore]
