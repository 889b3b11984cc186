"""A blob store in a local directory; writes are atomic and durable (temp + fsync + link)."""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from archive_pipelines.blobstore.base import BlobStore
from archive_pipelines.blobstore.blob_results import CheckResult, PutResult
from archive_pipelines.blobstore.decode import open_decoded
from archive_pipelines.blobstore.encode import Encoded, encode_bytes
from archive_pipelines.blobstore.hashing import FileState, chunk_buffer, sha256_fd
from archive_pipelines.blobstore.keys import check_sha256
from archive_pipelines.blobstore.local_files import describe_os_error, fsync_dir, remove_stale_temps
from archive_pipelines.blobstore.object_tree import ObjectTree
from archive_pipelines.blobstore.object_writer import ObjectWriter
from archive_pipelines.blobstore.store_errors import BlobIntegrityError, BlobNotFound, BlobStoreError

SINGLE_PASS_BYTES = 8 << 20  # from this size, put_file hashes while copying (one read)


class LocalBlobStore(BlobStore):
    """Blobs as files under `root/sha256/ab/cd/`: the blob store interface (hashing,
    integrity, reading) over the object paths (`tree`) and their crash-safe writes
    (`writer`)."""

    is_local_folder = True

    def __init__(self, root: Path, *, name: str = "primary", codec: str = "raw",
                 zstd_level: int = 3, writable: bool = True, sync_each: bool = True) -> None:
        """`sync_each=False` is `deferred_sync()` for the store's whole life."""
        super().__init__(name=name, codec=codec, zstd_level=zstd_level, writable=writable)
        self.root = Path(root).expanduser().absolute()
        self.tree = ObjectTree(self.root, self.codec)
        self.writer = ObjectWriter(self.tree, name=self.name, codec=self.codec,
                                   zstd_level=self.zstd_level, sync_each=sync_each)

    def deferred_sync(self) -> contextlib.AbstractContextManager[None]:
        """Batch mode: puts skip their per-file fsyncs until `sync()` (still atomic: a
        crashed process never leaves a partial object visible). Not thread-safe to toggle.
        Call `sync()` before recording the batch anywhere that relies on durability.
        """
        return self.writer.deferred()

    def sync(self) -> None:
        """Make every object written so far durable (one syncfs for the store's filesystem)."""
        self.writer.sync()

    def sync_pending(self) -> None:
        """`sync()` if any object was published in deferred mode since the last sync."""
        self.writer.sync_pending()

    def __repr__(self) -> str:
        return f"LocalBlobStore(name={self.name!r}, codec={self.codec!r}, root={str(self.root)!r})"

    def local_path(self, sha256: str) -> Path:
        return self.tree.path(sha256)

    def exists(self, sha256: str) -> bool:
        return self.tree.exists(sha256)

    def object_path(self, sha256: str) -> str:
        """`local_path` as a string, cheaper for callers that go through many blobs."""
        return self.tree.object_path(sha256)

    # Writing.

    def put_file(self, path: Path | str, *, allow_hardlink: bool = False) -> PutResult:
        self._require_writable(f"store {path}")
        source = os.fspath(path)
        before = self._source_state(source)
        if before.size >= SINGLE_PASS_BYTES and not (allow_hardlink and self.codec == "raw"):
            return self._put_large(Path(source), before)
        # Plain strings and the open descriptor from here on: ingest calls this per file, and
        # pathlib objects and repeated path lookups were a third of its cost.
        fd = os.open(source, os.O_RDONLY | os.O_CLOEXEC)
        try:
            sha256, size = sha256_fd(fd)
            if FileState.of(fd) != before:  # another file, or this one edited meanwhile
                raise self._changed_during_ingest(Path(source), sha256)
            final = self.tree.unchecked_path(sha256)
            if os.path.isfile(final):
                return PutResult(sha256, size, 0, False)
            if allow_hardlink and self.codec == "raw":

                def same_inode(linked: os.stat_result) -> None:
                    if FileState.from_stat(linked) != before:
                        raise self._changed_during_ingest(Path(source), sha256)

                created = self.writer.link_in(source, sha256, check=same_inode)
                if created is not None:
                    return PutResult(sha256, size, size if created else 0, created)
            os.lseek(fd, 0, os.SEEK_SET)
            with open(fd, "rb", buffering=0, closefd=False) as reader:  # whole chunks: no buffer

                def unchanged(encoded: Encoded) -> None:
                    if encoded.sha256 != sha256 or FileState.of(fd) != before:
                        raise self._changed_during_ingest(Path(source), sha256)

                return self.writer.write_stream(reader, Path(final).parent, sha256,
                                                check=unchanged)
        finally:
            os.close(fd)

    def _put_large(self, path: Path, before: FileState) -> PutResult:
        """Large files: hash while copying (one read) instead of hash-then-copy (two).

        A duplicate then costs a wasted temp write, which is rare for large files.
        """
        with open(path, "rb", buffering=0) as source:
            if FileState.of(source.fileno()) != before:
                raise self._changed_during_ingest(path, "")

            def unchanged(encoded: Encoded) -> None:
                if FileState.of(source.fileno()) != before:
                    raise self._changed_during_ingest(path, encoded.sha256)

            return self.writer.write_stream(source, self.tree.staging, None, check=unchanged)

    def put_stream(self, stream: BinaryIO) -> PutResult:
        self._require_writable("store a stream")
        return self.writer.write_stream(stream, self.tree.staging, None)

    def put_verified(self, sha256: str, stream: BinaryIO, *,
                     size: int | None = None) -> PutResult:
        self._require_writable(f"store blob {sha256}")
        final = self.tree.path(sha256)
        return self.writer.write_stream(stream, final.parent, sha256, limit=size,
                                        check=lambda encoded: self._verify(encoded, sha256, size))

    def put_verified_bytes(self, sha256: str, data: bytes) -> PutResult:
        """One hash, one encode call, then create, write, rename: for a small blob the
        streaming machinery of `put_verified` cost more than the syscalls."""
        self._require_writable(f"store blob {sha256}")
        check_sha256(sha256)
        got = hashlib.sha256(data).hexdigest()
        if got != sha256:
            detail = f"hash mismatch: got {got[:16]}.."
            raise BlobIntegrityError(f"{self._label(sha256)}: {detail}", detail=detail)
        payload = encode_bytes(data, codec=self.codec, zstd_level=self.zstd_level)
        created = self.writer.write_payload(sha256, payload)
        return PutResult(sha256, len(data), len(payload) if created else 0, created)

    # Reading and maintenance.

    def open(self, sha256: str, *, max_size: int | None = None) -> BinaryIO:
        path = self.tree.path(sha256)
        try:
            stored = open(path, "rb")  # noqa: SIM115 -- the returned reader closes it
        except FileNotFoundError:
            raise BlobNotFound(f"{self._label(sha256)} not found ({path})") from None
        return open_decoded(stored, codec=self.codec, max_size=max_size,
                            label=self._label(sha256))

    def check(self, sha256: str, *, expected_size: int | None = None,
              keep_up_to: int = 0) -> CheckResult:
        """As `BlobStore.check`; raw objects are read straight from their descriptor into
        one reused buffer (no decoding reader, no buffer allocated per read)."""
        if self.codec != "raw":
            return super().check(sha256, expected_size=expected_size, keep_up_to=keep_up_to)
        try:
            fd = os.open(self.tree.object_path(sha256), os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return CheckResult(sha256, "missing", f"not in store {self.name!r}")
        digest = hashlib.sha256()
        size = 0
        kept: list[bytes] | None = [] if keep_up_to > 0 else None
        try:
            buffer, view = chunk_buffer()
            while got := os.readv(fd, [buffer]):
                size += got
                if expected_size is not None and size > expected_size:
                    return CheckResult(sha256, "corrupt", f"larger than {expected_size} bytes")
                digest.update(view[:got])
                if kept is not None and size <= keep_up_to:
                    kept.append(bytes(view[:got]))
                else:
                    kept = None
        finally:
            os.close(fd)
        return self._checked(sha256, digest.hexdigest(), size, expected_size=expected_size, kept=kept)

    def delete(self, sha256: str) -> bool:
        self._require_writable(f"delete blob {sha256}")
        path = self.tree.path(sha256)
        try:
            path.unlink()
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise BlobStoreError(f"{self._label(sha256)}: cannot delete: "
                                 f"{describe_os_error(exc)}") from exc
        fsync_dir(path.parent)
        return True

    def iter_hashes(self, prefix: str = "") -> Iterator[str]:
        return self.tree.iter_hashes(prefix)

    def read_range(self, sha256: str, offset: int, length: int) -> bytes:
        if self.codec != "raw":
            return super().read_range(sha256, offset, length)
        if offset < 0 or length < 0:
            raise ValueError(f"bad range: offset {offset}, length {length}")
        try:
            fd = os.open(self.tree.object_path(sha256), os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            raise BlobNotFound(f"{self._label(sha256)} not found") from None
        try:
            return os.pread(fd, length, offset)
        finally:
            os.close(fd)

    def remove_stale_temp_files(self, max_age_seconds: float = 24 * 3600) -> int:
        """Delete temp files left by killed writers (never visible as blobs). Returns the count."""
        self._require_writable("remove temp files")
        return remove_stale_temps(self.tree.temp_dirs(), max_age_seconds)
