"""Named files in an S3 primary's bucket, beside its blobs: the crawl segments and compacted
sessions that every machine must reach, under `<store prefix>/sessions/...`.

A blob's key is its hash; these keys are the data-dir relative paths the catalog's ledger
already uses (`sessions/{day}/{session}/{name}.jsonl`), so a segment has the same name on
every machine. An object is written once: a put carries the SHA-256 of the bytes, which S3
verifies, and `If-None-Match: *`, so an existing object is never replaced (a second put of
the same bytes is accepted as done; of other bytes, refused).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from archive_pipelines.blobstore.base import BlobStore
from archive_pipelines.blobstore.s3_errors import error_code, http_status, s3_errors
from archive_pipelines.blobstore.store_errors import BlobIntegrityError, BlobStoreError

if TYPE_CHECKING:
    from archive_pipelines.blobstore.s3 import S3BlobStore


@dataclass(frozen=True)
class NamedObject:
    """One listed object: its data-dir relative name, size and last change (UTC)."""

    relative: str
    size: int
    modified: datetime


class NamedObjects:
    """Objects named by data-dir relative paths in an S3 store's bucket, under its prefix."""

    def __init__(self, store: S3BlobStore) -> None:
        self.store = store
        self.bucket = store.bucket
        self._client = store._client  # the store's own client: its requests are counted too
        self._prefix = f"{store.prefix}/" if store.prefix else ""

    def key(self, relative: str) -> str:
        if relative.startswith("/") or ".." in relative.split("/"):
            raise ValueError(f"{relative!r} is not a relative name")
        return self._prefix + relative

    def url(self, relative: str) -> str:
        return f"s3://{self.bucket}/{self.key(relative)}"

    def _errors(self, action: str, *, writing: bool = False
                ) -> contextlib.AbstractContextManager[None]:
        return s3_errors(store=self.store.name, bucket=self.bucket, action=action,
                         writing=writing, attempts=self.store.network.attempts)

    def put_file(self, relative: str, path: Path) -> int:
        """Upload a local file under `relative`, checksummed (S3 verifies the SHA-256);
        returns its size. An object already there with the same bytes counts as done;
        with other bytes: BlobIntegrityError (nothing is overwritten)."""
        data = path.read_bytes()
        digest = hashlib.sha256(data).digest()
        checksum = base64.b64encode(digest).decode("ascii")
        key = self.key(relative)
        with self._errors(f"uploading {relative}", writing=True):
            try:
                response = self._client.put_object(
                    Bucket=self.bucket, Key=key, Body=data, ContentLength=len(data),
                    ChecksumAlgorithm="SHA256", ChecksumSHA256=checksum, IfNoneMatch="*",
                    Metadata={"sha256": digest.hex()})
            except ClientError as exc:
                if http_status(exc) != 412:
                    raise
                return self._same_object(relative, digest=digest, size=len(data))
        if response.get("ChecksumSHA256", checksum) != checksum:
            raise BlobIntegrityError(f"store {self.store.name!r}: {self.url(relative)} was "
                                     "stored with another checksum than the file's")
        return len(data)

    def _same_object(self, relative: str, *, digest: bytes, size: int) -> int:
        """The object a conditional put found: accepted if it holds these bytes."""
        head = self._client.head_object(Bucket=self.bucket, Key=self.key(relative),
                                        ChecksumMode="ENABLED")
        stored = head.get("Metadata", {}).get("sha256", "")
        if head.get("ContentLength") != size or stored != digest.hex():
            raise BlobIntegrityError(f"store {self.store.name!r}: {self.url(relative)} exists "
                                     "with other bytes: not replaced")
        return size

    def list(self, relative_prefix: str) -> Iterator[NamedObject]:
        """Every object whose relative name starts with `relative_prefix`, in key order."""
        paginator = self._client.get_paginator("list_objects_v2")
        pages = iter(paginator.paginate(Bucket=self.bucket, Prefix=self.key(relative_prefix)))
        while True:
            with self._errors(f"listing {relative_prefix}"):
                page = next(pages, None)
            if page is None:
                return
            for item in page.get("Contents", []):
                key = item.get("Key", "")
                if key.startswith(self._prefix):
                    yield NamedObject(key[len(self._prefix):], int(item.get("Size", 0)),
                                      item["LastModified"])

    def read(self, relative: str) -> bytes:
        """The whole object, its checksum checked by the client; FileNotFoundError if absent."""
        response = self._get(relative, ChecksumMode="ENABLED")
        with self._errors(f"reading {relative}"):
            return bytes(response["Body"].read())

    def read_range(self, relative: str, offset: int, length: int) -> bytes:
        """Up to `length` bytes from `offset` (one ranged GET); FileNotFoundError if absent."""
        if length <= 0:
            return b""
        try:
            response = self._get(relative, Range=f"bytes={offset}-{offset + length - 1}")
        except _PastTheEnd:
            return b""
        with self._errors(f"reading {relative}"):
            return bytes(response["Body"].read())

    def _get(self, relative: str, **extra: Any) -> Any:
        with self._errors(f"reading {relative}"):
            try:
                return self._client.get_object(Bucket=self.bucket, Key=self.key(relative),
                                               **extra)
            except ClientError as exc:
                if error_code(exc) in ("NoSuchKey", "404"):
                    raise FileNotFoundError(f"{self.url(relative)} does not exist") from None
                if error_code(exc) == "InvalidRange":
                    raise _PastTheEnd from None
                raise

    def size(self, relative: str) -> int | None:
        """The object's size, None if absent (one HEAD)."""
        with self._errors(f"looking up {relative}"):
            try:
                head = self._client.head_object(Bucket=self.bucket, Key=self.key(relative))
            except ClientError as exc:
                if http_status(exc) == 404:
                    return None
                raise
        return int(head["ContentLength"])

    def delete(self, relative: str) -> None:
        """Remove the object (absent already: nothing to do)."""
        with self._errors(f"deleting {relative}", writing=True):
            self._client.delete_object(Bucket=self.bucket, Key=self.key(relative))


class _PastTheEnd(Exception):
    """A ranged GET starting at or after the object's end."""


def named_objects(store: BlobStore) -> NamedObjects | None:
    """The named objects beside an S3 store's blobs; None for any other store (a local
    primary keeps these files in the data dir)."""
    if store.is_local_folder:
        return None
    from archive_pipelines.blobstore.s3 import S3BlobStore  # boto3 is slow to import

    if not isinstance(store, S3BlobStore):
        raise BlobStoreError(f"store {store.name!r} ({type(store).__name__}) cannot hold "
                             "crawl segments: the primary is a local folder or an S3 bucket")
    return NamedObjects(store)
