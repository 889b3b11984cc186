"""A blob store in an S3 bucket (+ prefix): checksummed puts, streaming reads."""

from __future__ import annotations

import base64
import contextlib
import os
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Literal, cast

import boto3
import botocore.loaders
import botocore.session
from boto3.s3.transfer import TransferConfig
from botocore.config import Config
from botocore.exceptions import ClientError

from archive_pipelines.blobstore.base import BlobStore
from archive_pipelines.blobstore.blob_results import PutResult
from archive_pipelines.blobstore.decode import open_decoded
from archive_pipelines.blobstore.encode import Encoded, encode_stream
from archive_pipelines.blobstore.hashing import FileState, sha256_file
from archive_pipelines.blobstore.keys import check_hex_prefix, hash_from_key, key_prefix
from archive_pipelines.blobstore.local_files import describe_os_error
from archive_pipelines.blobstore.s3_errors import S3Refused, error_code, http_status, s3_errors
from archive_pipelines.blobstore.s3_requests import S3RequestCounter
from archive_pipelines.blobstore.store_errors import BlobNotFound, BlobStoreError

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

RetryMode = Literal["standard", "adaptive"]
MIB = 1024 * 1024
_SPOOL_IN_MEMORY = 8 * MIB  # larger encoded blobs spool to a temp file before upload
_MIN_PART = 16 * MIB
_MAX_PARTS = 9_000  # S3 allows 10,000; keep a margin
# Parsing the S3 service model costs ~150 ms per session; sessions can share the loaded model.
_MODEL_LOADER = botocore.loaders.create_loader()
# Connections a store's client keeps open: the upload and check threads of ingest, import,
# verify and scrub (8-16 each) share one client; botocore's default of 10 would make the
# rest wait for, or discard, a connection.
MAX_CONNECTIONS = 32


# Environment overrides of S3Network's defaults (the retry ones are AWS's own names).
ENV_CONNECT_TIMEOUT = "ARCHIVE_S3_CONNECT_TIMEOUT"
ENV_READ_TIMEOUT = "ARCHIVE_S3_READ_TIMEOUT"
ENV_MAX_ATTEMPTS = "AWS_MAX_ATTEMPTS"
ENV_RETRY_MODE = "AWS_RETRY_MODE"


@dataclass(frozen=True)
class S3Network:
    """How long one S3 request may wait and how often it is tried: every request is bounded.

    A request that times out, cannot connect, is throttled (SlowDown) or gets a 5xx is
    retried with exponential backoff (botocore's standard or adaptive mode) up to
    `attempts` tries in all; a 4xx (access denied, no such bucket) is never retried. The
    worst case for one request is about `attempts * (connect_timeout + read_timeout)` plus
    a few seconds of backoff. `read_timeout` bounds each wait for the endpoint's next bytes,
    not a whole transfer.
    """

    connect_timeout: float = 5.0  # seconds
    read_timeout: float = 20.0  # seconds
    attempts: int = 3  # tries of one request, the first included
    retry_mode: RetryMode = "standard"  # or "adaptive" (client-side rate limiting too)

    def __post_init__(self) -> None:
        if self.connect_timeout <= 0 or self.read_timeout <= 0:
            raise ValueError("S3 timeouts must be positive")
        if not 1 <= self.attempts <= 10:
            raise ValueError(f"S3 attempts must be 1-10, got {self.attempts}")
        if self.retry_mode not in ("standard", "adaptive"):
            raise ValueError(f"S3 retry mode must be standard or adaptive, "
                             f"got {self.retry_mode!r}")

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> S3Network:
        """The defaults, overridden by ARCHIVE_S3_CONNECT_TIMEOUT / ARCHIVE_S3_READ_TIMEOUT
        (seconds), AWS_MAX_ATTEMPTS and AWS_RETRY_MODE where set."""
        env = os.environ if environ is None else environ
        default = cls()

        def number(name: str, fallback: float) -> float:
            raw = env.get(name, "").strip()
            try:
                return float(raw) if raw else fallback
            except ValueError:
                raise ValueError(f"{name} must be a number of seconds, got {raw!r}") from None

        attempts = env.get(ENV_MAX_ATTEMPTS, "").strip()
        if attempts and not attempts.isdigit():
            raise ValueError(f"{ENV_MAX_ATTEMPTS} must be a whole number, got {attempts!r}")
        mode = env.get(ENV_RETRY_MODE, "").strip()
        return cls(connect_timeout=number(ENV_CONNECT_TIMEOUT, default.connect_timeout),
                   read_timeout=number(ENV_READ_TIMEOUT, default.read_timeout),
                   attempts=int(attempts) if attempts else default.attempts,
                   retry_mode="adaptive" if mode == "adaptive" else "standard")

    def client_config(self) -> Config:
        return Config(connect_timeout=self.connect_timeout, read_timeout=self.read_timeout,
                      retries={"mode": self.retry_mode, "total_max_attempts": self.attempts},
                      tcp_keepalive=True, max_pool_connections=MAX_CONNECTIONS)


def _new_client(endpoint_url: str | None, region: str | None, network: S3Network) -> S3Client:
    # A private session per store: boto3's default session is not safe to share across threads,
    # and credentials are resolved per store through the standard AWS chain.
    core = botocore.session.get_session()
    core.register_component("data_loader", _MODEL_LOADER)
    return boto3.session.Session(botocore_session=core).client(
        "s3", endpoint_url=endpoint_url, region_name=region, config=network.client_config())


class _S3Body:
    """A get_object body whose transport and checksum errors become BlobStoreError."""

    def __init__(self, body: Any, errors: Callable[[], contextlib.AbstractContextManager[None]]
                 ) -> None:
        self._body = body
        self._errors = errors

    def read(self, size: int = -1) -> bytes:
        with self._errors():
            return bytes(self._body.read(size if size >= 0 else None))

    def close(self) -> None:
        self._body.close()


class S3BlobStore(BlobStore):
    """Blobs as objects `<prefix>/sha256/ab/cd/<hash>[.zst]`; credentials from the AWS chain.

    Requests per blob (see `request_counts`): a put of a blob already present is one
    HeadObject; a new small blob is a HeadObject and a PutObject; a read is one GetObject.
    With `look_before_put=False` a small blob's put is one conditional PutObject
    (`If-None-Match: *`) whether it is new or not: S3 refuses it (412) when the object exists,
    so nothing is overwritten, but a present blob's bytes are sent and the refused PUT is
    billed at the PUT price (12.5 HEADs). Meant for callers that know the blob is most likely
    new (the catalog has no copy of it); blobs above the multipart threshold are looked up first.
    """

    def __init__(self, *, bucket: str, prefix: str = "", name: str, codec: str = "zstd",
                 zstd_level: int = 3, endpoint_url: str | None = None, region: str | None = None,
                 writable: bool = True, client: S3Client | None = None,
                 multipart_threshold: int = 64 * MIB, network: S3Network | None = None,
                 look_before_put: bool = True) -> None:
        super().__init__(name=name, codec=codec, zstd_level=zstd_level, writable=writable)
        if not bucket:
            raise ValueError(f"store {name!r}: an S3 store needs a bucket")
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.endpoint_url = endpoint_url or None
        self.multipart_threshold = max(5 * MIB, multipart_threshold)  # S3's minimum part size
        self.network = network or S3Network.from_environ()
        self.look_before_put = look_before_put
        self._client: S3Client = client or _new_client(self.endpoint_url, region or None,
                                                       self.network)
        self._tries = 0 if client is not None else self.network.attempts  # for messages
        self._bucket_seen = False
        self._bucket_lock = threading.Lock()
        self._requests = S3RequestCounter()  # a given client's other requests count too
        self._requests.attach(self._client)

    def __repr__(self) -> str:
        return (f"S3BlobStore(name={self.name!r}, codec={self.codec!r}, "
                f"bucket={self.bucket!r}, prefix={self.prefix!r})")

    def request_counts(self) -> dict[str, int]:
        """HTTP requests this store has sent, by S3 operation (`PutObject`, `HeadObject`,
        ...): each retry counts as the extra request it is. Thread-safe."""
        return self._requests.counts()

    def take_request_counts(self) -> dict[str, int]:
        """`request_counts()`, then start counting again from zero."""
        return self._requests.take()

    def object_key(self, sha256: str) -> str:
        """The full S3 key of a blob: the store prefix, then the common layout."""
        key = self.key(sha256)
        return f"{self.prefix}/{key}" if self.prefix else key

    def local_path(self, sha256: str) -> Path | None:
        self.key(sha256)
        return None

    def _errors(self, action: str, *, writing: bool = False
                ) -> contextlib.AbstractContextManager[None]:
        return s3_errors(store=self.name, bucket=self.bucket, action=action, writing=writing,
                         attempts=self._tries)

    # Writing.

    def put_file(self, path: Path | str, *, allow_hardlink: bool = False) -> PutResult:
        self._require_writable(f"store {path}")
        path = Path(path)
        before = self._source_state(path)
        sha256, size = sha256_file(path)
        if FileState.of(path) != before:
            raise self._changed_during_ingest(path, sha256)
        if self.look_before_put and self.exists(sha256):
            return PutResult(sha256, size, 0, False)
        with open(path, "rb") as source:
            if FileState.of(source.fileno()) != before:
                raise self._changed_during_ingest(path, sha256)

            def unchanged(encoded: Encoded) -> None:
                if encoded.sha256 != sha256 or FileState.of(source.fileno()) != before:
                    raise self._changed_during_ingest(path, sha256)

            return self._spool_and_put(source, sha256, check=unchanged, look_first=False)

    def put_stream(self, stream: BinaryIO) -> PutResult:
        self._require_writable("store a stream")
        return self._spool_and_put(stream, None)

    def put_verified(self, sha256: str, stream: BinaryIO, *,
                     size: int | None = None) -> PutResult:
        self._require_writable(f"store blob {sha256}")
        self.key(sha256)
        return self._spool_and_put(stream, sha256, limit=size,
                                   check=lambda encoded: self._verify(encoded, sha256, size))

    def _spool_and_put(self, source: BinaryIO, sha256: str | None, *, limit: int | None = None,
                       check: Callable[[Encoded], None] | None = None,
                       look_first: bool = True) -> PutResult:
        """Encode into a spooled temp file (hashing), check, then upload with a checksum."""
        with tempfile.SpooledTemporaryFile(max_size=_SPOOL_IN_MEMORY) as spool:
            try:
                encoded = encode_stream(source, cast(BinaryIO, spool), codec=self.codec,
                                        zstd_level=self.zstd_level, limit=limit)
            except OSError as exc:
                what = f"blob {sha256}" if sha256 else "a blob"
                raise BlobStoreError(
                    f"store {self.name!r}: cannot spool {what} for upload in "
                    f"{tempfile.gettempdir()}: {describe_os_error(exc)}") from exc
            if check is not None:
                check(encoded)
            large = encoded.stored_bytes > self.multipart_threshold
            if (look_first if self.look_before_put else large) and self.exists(encoded.sha256):
                return PutResult(encoded.sha256, encoded.size, 0, False)
            spool.seek(0)
            if not self._upload(encoded, cast(BinaryIO, spool)):
                return PutResult(encoded.sha256, encoded.size, 0, False)
        return PutResult(encoded.sha256, encoded.size, encoded.stored_bytes, True)

    def _upload(self, encoded: Encoded, body: BinaryIO) -> bool:
        """Upload with a checksum S3 verifies; False if a conditional put found the object."""
        key = self.object_key(encoded.sha256)
        metadata = {"sha256": encoded.sha256, "raw-size": str(encoded.size),
                    "codec": self.codec}
        with self._errors(f"putting blob {encoded.sha256}", writing=True):
            if encoded.stored_bytes > self.multipart_threshold:
                # Each part carries its own SHA-256 checksum, which S3 verifies.
                part_size = max(_MIN_PART, -(-encoded.stored_bytes // _MAX_PARTS))
                config = TransferConfig(multipart_threshold=self.multipart_threshold,
                                        multipart_chunksize=part_size, max_concurrency=4)
                self._client.upload_fileobj(
                    body, self.bucket, key, Config=config,
                    ExtraArgs={"ChecksumAlgorithm": "SHA256", "Metadata": metadata})
            else:
                put: dict[str, Any] = {
                    "Bucket": self.bucket, "Key": key, "Body": body,
                    "ContentLength": encoded.stored_bytes, "ChecksumAlgorithm": "SHA256",
                    "ChecksumSHA256": base64.b64encode(encoded.stored_digest).decode("ascii"),
                    "Metadata": metadata}
                if not self.look_before_put:
                    put["IfNoneMatch"] = "*"
                try:
                    self._client.put_object(**put)
                except ClientError as exc:
                    if self.look_before_put or http_status(exc) != 412:
                        raise
                    self._bucket_seen = True
                    return False  # present already: content addressed, so the same bytes
        self._bucket_seen = True
        return True

    # Reading and maintenance.

    def exists(self, sha256: str) -> bool:
        return self._has_key(self.object_key(sha256), f"looking up blob {sha256}")

    def probe(self) -> None:
        """Look up a key no blob has: raises S3StoreError unless the endpoint answers, the
        credentials are accepted and the bucket exists (one request, two for a bare 404)."""
        self._has_key(self.object_key("0" * 64), "checking the store")

    def _has_key(self, key: str, action: str) -> bool:
        with self._errors(action):
            try:
                self._client.head_object(Bucket=self.bucket, Key=key)
            except ClientError as exc:
                if http_status(exc) != 404:
                    raise
            else:
                self._bucket_seen = True
                return True
            self._require_bucket()  # HEAD's bare 404 does not say whether key or bucket is gone
        return False

    def _require_bucket(self) -> None:
        if self._bucket_seen:
            return
        with self._bucket_lock:  # threads missing at once ask once
            if self._bucket_seen:
                return
            try:
                self._client.head_bucket(Bucket=self.bucket)
            except ClientError as exc:
                if http_status(exc) == 404 or error_code(exc) in ("NoSuchBucket", "404"):
                    raise S3Refused(f"store {self.name!r}: bucket {self.bucket!r} does not "
                                    "exist", store=self.name) from exc
                raise
            self._bucket_seen = True

    def open(self, sha256: str, *, max_size: int | None = None) -> BinaryIO:
        key = self.object_key(sha256)
        with self._errors(f"reading blob {sha256}"):
            try:
                response = self._client.get_object(Bucket=self.bucket, Key=key,
                                                    ChecksumMode="ENABLED")
            except ClientError as exc:
                if error_code(exc) in ("NoSuchKey", "404"):
                    raise BlobNotFound(f"{self._label(sha256)} not found "
                                       f"(s3://{self.bucket}/{key})") from None
                raise
        self._bucket_seen = True
        body = _S3Body(response["Body"], lambda: self._errors(f"reading blob {sha256}"))
        return open_decoded(cast(BinaryIO, body), codec=self.codec, max_size=max_size,
                            label=self._label(sha256))

    def read_range(self, sha256: str, offset: int, length: int) -> bytes:
        """One ranged GetObject for the raw codec (see `BlobStore.read_range`)."""
        if self.codec != "raw":
            return super().read_range(sha256, offset, length)
        if offset < 0 or length < 0:
            raise ValueError(f"bad range: offset {offset}, length {length}")
        if length == 0:
            return b""
        key = self.object_key(sha256)
        with self._errors(f"reading blob {sha256}"):
            try:
                response = self._client.get_object(Bucket=self.bucket, Key=key,
                                                    Range=f"bytes={offset}-{offset + length - 1}")
            except ClientError as exc:
                if error_code(exc) in ("NoSuchKey", "404"):
                    raise BlobNotFound(f"{self._label(sha256)} not found "
                                       f"(s3://{self.bucket}/{key})") from None
                if error_code(exc) == "InvalidRange":  # at or past the end
                    return b""
                raise
            self._bucket_seen = True
            return bytes(response["Body"].read())

    def delete(self, sha256: str) -> bool:
        self._require_writable(f"delete blob {sha256}")
        if not self.exists(sha256):
            return False
        with self._errors(f"deleting blob {sha256}", writing=True):
            self._client.delete_object(Bucket=self.bucket, Key=self.object_key(sha256))
        return True

    def set_aside(self, sha256: str, suffix: str, *, folder: str = "quarantine") -> str | None:
        """Move a blob's object to `<folder>/<name>.<suffix>` (no dot without a suffix) under
        the store prefix: a server-side copy, then the original key is deleted (the bytes are
        kept, the key is free for a good copy). Returns the new key, or None if there was no
        object."""
        self._require_writable(f"set blob {sha256} aside")
        key = self.object_key(sha256)
        store_prefix = f"{self.prefix}/" if self.prefix else ""
        target = f"{store_prefix}{folder}/{key.rsplit('/', 1)[-1]}" + (f".{suffix}" if suffix else "")
        with self._errors(f"setting blob {sha256} aside", writing=True):
            try:  # no HEAD first: a copy of a missing key fails with NoSuchKey
                self._client.copy_object(Bucket=self.bucket, Key=target,
                                         CopySource={"Bucket": self.bucket, "Key": key})
            except ClientError as exc:
                if error_code(exc) in ("NoSuchKey", "404"):
                    return None
                raise
            self._client.delete_object(Bucket=self.bucket, Key=key)
        self._bucket_seen = True
        return target

    def put_back(self, key: str, sha256: str) -> bool:
        """Move an object `set_aside` moved to `key` back to the blob's own key (server-side
        copy, unless the key holds the blob again already), then delete `key`. False when
        `key` was gone."""
        self._require_writable(f"put blob {sha256} back")
        if not self._has_key(key, f"looking up {key}"):
            return False
        with self._errors(f"putting blob {sha256} back", writing=True):
            if not self.exists(sha256):
                self._client.copy_object(Bucket=self.bucket, Key=self.object_key(sha256),
                                         CopySource={"Bucket": self.bucket, "Key": key})
            self._client.delete_object(Bucket=self.bucket, Key=key)
        return True

    def delete_aside(self, keys: list[str]) -> None:
        """Delete objects `set_aside` or `list_aside` named (never a blob's own key): one
        DeleteObjects request per 1,000."""
        self._require_writable(f"delete {len(keys)} object(s) set aside")
        for key in keys:
            if hash_from_key(self._relative(key), self.codec) is not None:
                raise ValueError(f"store {self.name!r}: {key} is a blob's key, not one set aside")
        for start in range(0, len(keys), 1000):
            chunk = keys[start:start + 1000]
            with self._errors(f"deleting {len(chunk)} object(s) set aside", writing=True):
                response = self._client.delete_objects(
                    Bucket=self.bucket, Delete={"Objects": [{"Key": key} for key in chunk],
                                                "Quiet": True})
            failed = response.get("Errors", [])
            if failed:
                first = failed[0]
                raise BlobStoreError(
                    f"store {self.name!r}: could not delete {len(failed)} object(s) set aside, "
                    f"e.g. {first.get('Key')}: {first.get('Code')} {first.get('Message')}")

    def list_aside(self, folder: str) -> Iterator[StoredObject]:
        """The objects under `<folder>/` of the store prefix (what `set_aside` moved there):
        full key, the name after the folder, size and last-modified time."""
        store_prefix = f"{self.prefix}/" if self.prefix else ""
        for item in self._list(f"{store_prefix}{folder}/", f"listing {folder}/"):
            key = item["Key"]
            yield StoredObject(key, key.rsplit("/", 1)[-1], item.get("Size", 0),
                               item["LastModified"])

    def iter_objects(self, prefix: str = "") -> Iterator[StoredObject]:
        """Every stored blob in this codec (optionally those starting with a hex prefix) in
        key order, which is hash order: `name` is the hash, with the object's size and
        last-modified time. One ListObjectsV2 request per 1,000 objects."""
        check_hex_prefix(prefix)
        store_prefix = f"{self.prefix}/" if self.prefix else ""
        for item in self._list(store_prefix + key_prefix(prefix), "listing blobs"):
            sha256 = hash_from_key(self._relative(item["Key"]), self.codec)
            if sha256 is not None and sha256.startswith(prefix):
                yield StoredObject(item["Key"], sha256, item.get("Size", 0), item["LastModified"])

    def iter_hashes(self, prefix: str = "") -> Iterator[str]:
        return (stored.name for stored in self.iter_objects(prefix))

    def _relative(self, key: str) -> str:
        store_prefix = f"{self.prefix}/" if self.prefix else ""
        return key[len(store_prefix):] if key.startswith(store_prefix) else ""

    def _list(self, key_start: str, action: str) -> Iterator[Any]:
        paginator = self._client.get_paginator("list_objects_v2")
        pages = iter(paginator.paginate(Bucket=self.bucket, Prefix=key_start))
        while True:
            with self._errors(action):
                page = next(pages, None)
            if page is None:
                return
            self._bucket_seen = True  # listed: the bucket exists (a later bare 404 is a key)
            for item in page.get("Contents", []):
                if item.get("Key", "").startswith(key_start):
                    yield item


@dataclass(frozen=True)
class StoredObject:
    """One object of an S3 store's listing."""

    key: str  # the full key in the bucket
    name: str  # a blob's hash, or the name of an object set aside
    size: int  # stored bytes
    last_modified: datetime
