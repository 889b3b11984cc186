"""The blob store interface: content-addressed by the SHA-256 of the raw bytes, any codec."""

from __future__ import annotations

import abc
import contextlib
import hashlib
import io
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from archive_pipelines.blobstore.blob_results import CheckResult, PutResult
from archive_pipelines.blobstore.encode import Encoded
from archive_pipelines.blobstore.hashing import FileState, chunk_buffer
from archive_pipelines.blobstore.keys import Codec, blob_key, check_codec
from archive_pipelines.blobstore.store_errors import (
    BlobIntegrityError,
    BlobNotFound,
    BlobStoreError,
    StoreNotWritable,
)


class BlobStore(abc.ABC):
    """One store (a local directory or an S3 bucket + prefix) holding blobs in one codec."""

    name: str
    codec: Codec
    writable: bool
    # Whether its blobs are files on this machine (`local_path` gives them); else an object store.
    is_local_folder: bool = False

    def __init__(self, *, name: str, codec: str, zstd_level: int, writable: bool) -> None:
        if not 1 <= zstd_level <= 22:
            raise ValueError(f"store {name!r}: zstd_level must be 1-22, got {zstd_level}")
        self.name = name
        self.codec = check_codec(codec)
        self.zstd_level = zstd_level
        self.writable = writable

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, codec={self.codec!r})"

    def key(self, sha256: str) -> str:
        """`sha256/ab/cd/<hash>[.zst]`; ValueError unless `sha256` is 64 lowercase hex."""
        return blob_key(sha256, self.codec)

    @abc.abstractmethod
    def put_file(self, path: Path | str, *, allow_hardlink: bool = False) -> PutResult:
        """Store a regular file: hash it; if the blob is new, copy it in.

        `allow_hardlink` applies to local raw stores on the same filesystem (else: a copy).
        Raises BlobIntegrityError if the file changes meanwhile; errors opening or reading
        the source itself propagate as OSError.
        """

    @abc.abstractmethod
    def put_stream(self, stream: BinaryIO) -> PutResult:
        """Store everything `stream` yields until EOF, read in chunks."""

    def put_bytes(self, data: bytes) -> PutResult:
        """Store a small in-memory blob."""
        return self.put_stream(io.BytesIO(data))

    @abc.abstractmethod
    def put_verified(self, sha256: str, stream: BinaryIO, *,
                     size: int | None = None) -> PutResult:
        """Store a stream that must hash to `sha256` (and be `size` bytes, if given).

        Raises BlobIntegrityError, leaving nothing visible, if it does not. The stream is
        always read and verified, even when the store already holds the blob.
        """

    def put_verified_bytes(self, sha256: str, data: bytes) -> PutResult:
        """`put_verified` of a blob held in memory (its size is `len(data)`)."""
        return self.put_verified(sha256, io.BytesIO(data), size=len(data))

    @abc.abstractmethod
    def open(self, sha256: str, *, max_size: int | None = None) -> BinaryIO:
        """A streaming reader of the raw (decoded) bytes; BlobNotFound if absent.

        Reading raises BlobIntegrityError if the object does not decode or yields more than
        `max_size` bytes. Close it (or use it as a context manager).
        """

    @abc.abstractmethod
    def exists(self, sha256: str) -> bool:
        """Whether the store holds an object under this blob's key (contents unchecked)."""

    @abc.abstractmethod
    def delete(self, sha256: str) -> bool:
        """Remove a blob (garbage collection). True if something was removed."""

    @abc.abstractmethod
    def iter_hashes(self, prefix: str = "") -> Iterator[str]:
        """Every stored hash in this codec (optionally those starting with a hex prefix)."""

    @abc.abstractmethod
    def local_path(self, sha256: str) -> Path | None:
        """Absolute path of the blob's file in a local store, whether present or not; else None."""

    # Durability: a local store batches its fsyncs (`deferred_sync`, then `sync`); an object
    # store's put is durable once acknowledged, so these are no-ops there.

    def deferred_sync(self) -> contextlib.AbstractContextManager[None]:
        """Batch mode: puts may skip per-object syncs until `sync()`."""
        return contextlib.nullcontext()

    def sync(self) -> None:
        """Make every object written so far durable."""
        return None

    def sync_pending(self) -> None:
        """`sync()` if anything was written in deferred mode since the last sync."""
        return None

    def read_range(self, sha256: str, offset: int, length: int) -> bytes:
        """Up to `length` raw bytes of the blob from `offset` (fewer at its end); BlobNotFound
        if absent. Unverified (a part cannot be checked against the whole blob's hash): the
        reader of a record inside a stored WARC. Backends of the raw codec read just the
        range; this fallback decodes from the start."""
        if offset < 0 or length < 0:
            raise ValueError(f"bad range: offset {offset}, length {length}")
        with self.open(sha256) as reader:
            left = offset
            while left > 0:
                skipped = reader.read(min(left, 1 << 20))
                if not skipped:
                    return b""
                left -= len(skipped)
            parts: list[bytes] = []
            while length > 0 and (chunk := reader.read(min(length, 1 << 20))):
                parts.append(chunk)
                length -= len(chunk)
        return b"".join(parts)

    @contextlib.contextmanager
    def local_copy(self, sha256: str, *, spool_dir: Path | None = None) -> Iterator[Path]:
        """A local file holding the blob's raw bytes, for readers that need a path (a WARC
        read record by record, an archive opened by a library): the blob's own file in a
        local raw store, else a verified temporary copy in `spool_dir` (default: the system
        temp dir), removed on exit. BlobNotFound if absent; BlobIntegrityError if the copy
        does not hash to `sha256`."""
        path = self.local_path(sha256)
        if path is not None and self.codec == "raw":
            if not path.is_file():
                raise BlobNotFound(f"{self._label(sha256)} not found ({path})")
            yield path
            return
        digest = hashlib.sha256()
        with tempfile.NamedTemporaryFile(prefix=".blob-", dir=spool_dir) as spool:
            with self.open(sha256) as reader:
                while chunk := reader.read(1 << 20):
                    digest.update(chunk)
                    spool.write(chunk)
            spool.flush()
            if digest.hexdigest() != sha256:
                detail = f"hash mismatch: got {digest.hexdigest()[:16]}.."
                raise BlobIntegrityError(f"{self._label(sha256)}: {detail}", detail=detail)
            yield Path(spool.name)

    def check(self, sha256: str, *, expected_size: int | None = None,
              keep_up_to: int = 0) -> CheckResult:
        """Read, decode and rehash a blob. Never raises for a missing or corrupt blob.

        With `keep_up_to`, a good blob of at most that many bytes comes back with its bytes
        (`CheckResult.data`): a copier can then write exactly what was verified, without
        reading the blob a second time. Store-level failures (unreachable bucket,
        permissions) still raise BlobStoreError.
        """
        self.key(sha256)
        digest = hashlib.sha256()
        size = 0
        kept: list[bytes] | None = [] if keep_up_to > 0 else None
        try:
            with self.open(sha256, max_size=expected_size) as reader:
                _buffer, view = chunk_buffer()
                while got := reader.readinto(view):  # type: ignore[attr-defined]
                    digest.update(view[:got])
                    size += got
                    if kept is not None and size <= keep_up_to:
                        kept.append(bytes(view[:got]))
                    else:
                        kept = None
        except BlobNotFound:
            return CheckResult(sha256, "missing", f"not in store {self.name!r}")
        except BlobIntegrityError as exc:
            return CheckResult(sha256, "corrupt", exc.detail)
        return self._checked(sha256, digest.hexdigest(), size, expected_size=expected_size, kept=kept)

    def _checked(self, sha256: str, got: str, size: int, *, expected_size: int | None,
                 kept: list[bytes] | None) -> CheckResult:
        """The verdict once a blob was read whole: `got` is the hash of its `size` bytes."""
        if expected_size is not None and size != expected_size:
            return CheckResult(sha256, "corrupt",
                               f"size mismatch: got {size} bytes, expected {expected_size}")
        if got != sha256:
            return CheckResult(sha256, "corrupt", f"hash mismatch: got {got[:16]}..")
        return CheckResult(sha256, "ok", data=b"".join(kept) if kept is not None else None)

    # Helpers for the backends.

    def _label(self, sha256: str) -> str:
        return f"store {self.name!r}: blob {sha256}"

    def _require_writable(self, action: str) -> None:
        if not self.writable:
            raise StoreNotWritable(f"store {self.name!r} is read-only (writable = false): "
                                   f"cannot {action}")

    def _verify(self, encoded: Encoded, sha256: str, size: int | None) -> None:
        """Raise BlobIntegrityError unless a streamed copy is the blob the caller promised."""
        if size is not None and encoded.size != size:
            got = f"more than {size}" if encoded.size > size else str(encoded.size)
            detail = f"size mismatch: got {got} bytes, expected {size}"
            raise BlobIntegrityError(f"{self._label(sha256)}: {detail}", detail=detail)
        if encoded.sha256 != sha256:
            detail = f"hash mismatch: got {encoded.sha256[:16]}.."
            raise BlobIntegrityError(f"{self._label(sha256)}: {detail}", detail=detail)

    def _source_state(self, path: Path | str) -> FileState:
        """The identity of a file about to be ingested; it must be a regular file."""
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            raise BlobStoreError(f"store {self.name!r}: cannot store {path}: not a regular file")
        return FileState.from_stat(st)

    def _changed_during_ingest(self, path: Path, sha256: str) -> BlobIntegrityError:
        detail = f"{path} changed during ingest"
        return BlobIntegrityError(f"{self._label(sha256)}: {detail}; nothing stored",
                                  detail=detail)
