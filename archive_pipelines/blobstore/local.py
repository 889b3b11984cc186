"""A blob store in a local directory; writes are atomic and durable (temp + fsync + link)."""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from archive_pipelines.blobstore.base import BlobStore
from archive_pipelines.blobstore.blob_results import CheckResult, PutResult
from archive_pipelines.blobstore.decode import open_decoded
from archive_pipelines.blobstore.encode import Encoded, encode_bytes, encode_stream
from archive_pipelines.blobstore.hashing import FileState, chunk_buffer, sha256_fd
from archive_pipelines.blobstore.keys import (
    SUFFIXES,
    check_hex_prefix,
    check_sha256,
    hash_from_key,
)
from archive_pipelines.blobstore.local_files import (
    LINK_UNSUPPORTED,
    describe_os_error,
    ensure_dir,
    fsync_dir,
    fsync_file,
    publish,
    remove_stale_temps,
    sync_filesystem,
    temp_name,
)
from archive_pipelines.blobstore.store_errors import BlobIntegrityError, BlobNotFound, BlobStoreError

_OBJECT_MODE = 0o444  # stored copies are immutable; a view's symlink must not edit the store
_STAGING = "tmp"  # streams of unknown hash are written here, then linked into place
_WRITE_BUFFER = 1 << 20
SINGLE_PASS_BYTES = 8 << 20  # from this size, put_file hashes while copying (one read)


class LocalBlobStore(BlobStore):
    """Blobs as files under `root/sha256/ab/cd/`."""

    def __init__(self, root: Path, *, name: str = "primary", codec: str = "raw",
                 zstd_level: int = 3, writable: bool = True, sync_each: bool = True) -> None:
        """`sync_each=False` is `deferred_sync()` for the store's whole life."""
        super().__init__(name=name, codec=codec, zstd_level=zstd_level, writable=writable)
        self.root = Path(root).expanduser().absolute()
        self._sync_each = sync_each
        self._unsynced = False  # an object was published since the last sync (deferred mode)
        # Leaf folders known to exist (the store never removes them): saves a stat per put.
        self._known_dirs: set[str] = set()
        self._objects = f"{self.root}/sha256/"
        self._suffix = SUFFIXES[self.codec]

    def _create(self, temp: Path) -> int:
        """Create a temp file read-only (the mode applies to later opens; no chmod needed)."""
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
        try:
            return os.open(temp, flags, _OBJECT_MODE)
        except FileNotFoundError:  # a known folder was removed behind our back
            self._known_dirs.discard(str(temp.parent))
            self._ensure_dir(temp.parent)
            return os.open(temp, flags, _OBJECT_MODE)

    def _ensure_dir(self, directory: Path | str) -> None:
        directory = os.fspath(directory)
        if directory in self._known_dirs:
            return
        if self._sync_each:
            ensure_dir(Path(directory), sync=True)
        else:  # deferred: the batch's syncfs covers new folders; one mkdir if the parent exists
            try:
                os.mkdir(directory)
            except FileExistsError:
                if not os.path.isdir(directory):
                    raise
            except FileNotFoundError:
                ensure_dir(Path(directory), sync=False)
        self._known_dirs.add(directory)

    @contextlib.contextmanager
    def deferred_sync(self) -> Iterator[None]:
        """Batch mode: puts skip their per-file fsyncs until `sync()` (still atomic: a
        crashed process never leaves a partial object visible). Not thread-safe to toggle.
        Call `sync()` before recording the batch anywhere that relies on durability.
        """
        previous, self._sync_each = self._sync_each, False
        try:
            yield
        finally:
            self._sync_each = previous

    def sync(self) -> None:
        """Make every object written so far durable (one syncfs for the store's filesystem)."""
        self._unsynced = False  # before the syncfs: a put racing it sets this again
        if self.root.is_dir():
            sync_filesystem(self.root)

    def sync_pending(self) -> None:
        """`sync()` if any object was published in deferred mode since the last sync."""
        if self._unsynced:
            self.sync()

    def __repr__(self) -> str:
        return f"LocalBlobStore(name={self.name!r}, codec={self.codec!r}, root={str(self.root)!r})"

    def _path(self, sha256: str) -> Path:
        return self.root / self.key(sha256)

    def local_path(self, sha256: str) -> Path:
        return self._path(sha256)

    def exists(self, sha256: str) -> bool:
        # A string path and one stat: the crawler asks this for every body it fetches, and
        # building a Path cost more than the stat (bench/existence_bench.py).
        check_sha256(sha256)
        return os.path.isfile(f"{self._objects}{sha256[:2]}/{sha256[2:4]}/{sha256}{self._suffix}")

    def object_path(self, sha256: str) -> str:
        """`local_path` as a string, cheaper for callers that go through many blobs."""
        check_sha256(sha256)
        return self._object_path(sha256)

    def _object_path(self, sha256: str) -> str:
        """`object_path` for a hash this store computed itself (not validated)."""
        return f"{self._objects}{sha256[:2]}/{sha256[2:4]}/{sha256}{self._suffix}"

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
            final = self._object_path(sha256)
            if os.path.isfile(final):
                return PutResult(sha256, size, 0, False)
            if allow_hardlink and self.codec == "raw":
                linked = self._link_in(source, final, sha256, size, before)
                if linked is not None:
                    return linked
            os.lseek(fd, 0, os.SEEK_SET)
            with open(fd, "rb", buffering=0, closefd=False) as reader:  # whole chunks: no buffer

                def unchanged(encoded: Encoded) -> None:
                    if encoded.sha256 != sha256 or FileState.of(fd) != before:
                        raise self._changed_during_ingest(Path(source), sha256)

                return self._write(reader, Path(final).parent, sha256, check=unchanged)
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

            return self._write(source, self.root / _STAGING, None, check=unchanged)

    def put_stream(self, stream: BinaryIO) -> PutResult:
        self._require_writable("store a stream")
        return self._write(stream, self.root / _STAGING, None)

    def put_verified(self, sha256: str, stream: BinaryIO, *,
                     size: int | None = None) -> PutResult:
        self._require_writable(f"store blob {sha256}")
        final = self._path(sha256)
        return self._write(stream, final.parent, sha256, limit=size,
                           check=lambda encoded: self._verify(encoded, sha256, size))

    def put_verified_bytes(self, sha256: str, data: bytes) -> PutResult:
        """One hash, one encode call, then create, write, rename: for a small blob the
        streaming machinery of `put_verified` cost more than the syscalls."""
        self._require_writable(f"store blob {sha256}")
        final = self._object_path(check_sha256(sha256))
        got = hashlib.sha256(data).hexdigest()
        if got != sha256:
            detail = f"hash mismatch: got {got[:16]}.."
            raise BlobIntegrityError(f"{self._label(sha256)}: {detail}", detail=detail)
        payload = encode_bytes(data, codec=self.codec, zstd_level=self.zstd_level)
        directory = os.path.dirname(final)
        with self._os_errors(sha256), self._staged(temp_name(directory, sha256)) as staged:
            temp = staged.path
            self._ensure_dir(directory)
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC,
                         _OBJECT_MODE)
            try:
                _write_all(fd, payload)
                if self._sync_each:
                    os.fsync(fd)
            finally:
                os.close(fd)
            created = self._publish(staged, final)
        return PutResult(sha256, len(data), len(payload) if created else 0, created)

    def _write(self, source: BinaryIO, directory: Path, sha256: str | None, *,
               limit: int | None = None,
               check: Callable[[Encoded], None] | None = None) -> PutResult:
        """Encode `source` into a temp file in `directory`, check it, then link it into place."""
        with self._os_errors(sha256), \
                self._staged(temp_name(str(directory), sha256 or "put")) as staged:
            temp = staged.path
            self._ensure_dir(directory)
            # Created read-only (mode applies to later opens): no separate chmod.
            fd = self._create(Path(temp))
            with open(fd, "wb", buffering=_WRITE_BUFFER) as target:  # sized: no isatty()
                encoded = encode_stream(source, target, codec=self.codec,
                                        zstd_level=self.zstd_level, limit=limit,
                                        stored_digest=False)  # only S3 uploads use it
                if check is not None:
                    check(encoded)
                target.flush()
                if self._sync_each:
                    os.fsync(target.fileno())
            final = self._object_path(encoded.sha256)
            self._ensure_dir(os.path.dirname(final))
            created = self._publish(staged, final)
        stored = encoded.stored_bytes if created else 0
        return PutResult(encoded.sha256, encoded.size, stored, created)

    def _link_in(self, path: str, final: str, sha256: str, size: int, before: FileState
                 ) -> PutResult | None:
        """Hardlink an already-hashed file into place; None if the filesystem refuses links
        (or the file's mode cannot be changed): the caller copies instead.

        The store then shares the inode with `path`, which is made read-only like every
        stored object: editing `path` in place would change the stored blob, so callers only
        allow this for files nobody edits.
        """
        directory = os.path.dirname(final)
        with self._os_errors(sha256), self._staged(temp_name(directory, sha256)) as staged:
            temp = staged.path
            try:
                try:
                    os.link(path, temp)
                except FileNotFoundError:  # a leaf folder not made yet
                    if not os.path.exists(path):
                        raise
                    self._ensure_dir(directory)
                    os.link(path, temp)
            except OSError as exc:
                if exc.errno in LINK_UNSUPPORTED:
                    return None
                raise
            linked = os.stat(temp)
            if FileState.from_stat(linked) != before:
                raise self._changed_during_ingest(Path(path), sha256)
            if linked.st_mode & 0o222 and not _make_read_only(temp, linked.st_mode):
                return None  # not ours to chmod: copy instead
            if self._sync_each:
                fsync_file(Path(temp))  # the source's data may not have reached the disk yet
            created = self._publish(staged, final)
        return PutResult(sha256, size, size if created else 0, created)

    @contextlib.contextmanager
    def _staged(self, temp: str) -> Iterator[_Staged]:
        """A temp name for an object being written; unless `_publish` gave it its final
        name, whatever is left under it is removed on the way out."""
        staged = _Staged(temp)
        try:
            yield staged
        finally:
            if not staged.published:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(temp)

    def _publish(self, staged: _Staged, final: str) -> bool:
        """Give the complete temp its final name; never overwrites: an object already there
        (a concurrent writer) wins, and False says so."""
        created = staged.published = publish(staged.path, final, sync=self._sync_each)
        if created and not self._sync_each:
            self._unsynced = True
        return created

    @contextlib.contextmanager
    def _os_errors(self, sha256: str | None) -> Iterator[None]:
        try:
            yield
        except BlobStoreError:
            raise
        except OSError as exc:
            what = f"blob {sha256}" if sha256 else "a blob"
            raise BlobStoreError(f"store {self.name!r}: cannot write {what} under {self.root}: "
                                 f"{describe_os_error(exc)}") from exc

    # Reading and maintenance.

    def open(self, sha256: str, *, max_size: int | None = None) -> BinaryIO:
        path = self._path(sha256)
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
            fd = os.open(self._object_path(check_sha256(sha256)), os.O_RDONLY | os.O_CLOEXEC)
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
        return self._checked(sha256, digest.hexdigest(), size, expected_size, kept)

    def delete(self, sha256: str) -> bool:
        self._require_writable(f"delete blob {sha256}")
        path = self._path(sha256)
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
        check_hex_prefix(prefix)
        for first, second in self._leaf_dirs(prefix):
            for name in _sorted_names(self.root / "sha256" / first / second, dirs=False):
                sha256 = hash_from_key(f"sha256/{first}/{second}/{name}", self.codec)
                if sha256 is not None and sha256.startswith(prefix):
                    yield sha256

    def remove_stale_temp_files(self, max_age_seconds: float = 24 * 3600) -> int:
        """Delete temp files left by killed writers (never visible as blobs). Returns the count."""
        self._require_writable("remove temp files")
        leaves = [self.root / "sha256" / a / b for a, b in self._leaf_dirs("")]
        return remove_stale_temps([self.root / _STAGING, *leaves], max_age_seconds)

    def _leaf_dirs(self, prefix: str) -> Iterator[tuple[str, str]]:
        top = self.root / "sha256"
        for first in _sorted_names(top, dirs=True):
            if first.startswith(prefix[:2]):
                for second in _sorted_names(top / first, dirs=True):
                    if second.startswith(prefix[2:4]):
                        yield first, second


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


@dataclass
class _Staged:
    """A temp file being written (`LocalBlobStore._staged`)."""

    path: str
    published: bool = False


def _make_read_only(path: Path | str, mode: int) -> bool:
    """chmod a-w (keeping the other bits); False if we may not (another user's file)."""
    try:
        os.chmod(path, mode & 0o7555)
    except PermissionError:
        return False
    return True


def _sorted_names(directory: Path, *, dirs: bool) -> list[str]:
    try:
        with os.scandir(directory) as entries:
            return sorted(e.name for e in entries if e.is_dir(follow_symlinks=False) == dirs)
    except FileNotFoundError:
        return []
