"""Crash-safe writes of a local store's objects: a read-only temp file, fsync, then a link
to the final name that never overwrites; each put durable on its own, or a batch at once
(`deferred`, then `sync`)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from archive_pipelines.blobstore.blob_results import PutResult
from archive_pipelines.blobstore.encode import Encoded, encode_stream
from archive_pipelines.blobstore.keys import Codec
from archive_pipelines.blobstore.local_files import (
    LINK_UNSUPPORTED,
    describe_os_error,
    ensure_dir,
    fsync_file,
    publish,
    sync_filesystem,
    temp_name,
)
from archive_pipelines.blobstore.object_tree import ObjectTree
from archive_pipelines.blobstore.store_errors import BlobStoreError

OBJECT_MODE = 0o444  # stored copies are immutable; a view's symlink must not edit the store
_WRITE_BUFFER = 1 << 20


class ObjectWriter:
    """Writes the objects of `tree` (errors name the store `name`)."""

    def __init__(self, tree: ObjectTree, *, name: str, codec: Codec, zstd_level: int,
                 sync_each: bool) -> None:
        self.tree = tree
        self.name = name
        self.codec = codec
        self.zstd_level = zstd_level
        self.sync_each = sync_each
        self._unsynced = False  # an object was published since the last sync (deferred mode)
        # Leaf folders known to exist (the store never removes them): saves a stat per put.
        self._known_dirs: set[str] = set()

    # Durability.

    @contextlib.contextmanager
    def deferred(self) -> Iterator[None]:
        """Puts skip their per-file fsyncs until `sync()`. Not thread-safe to toggle."""
        previous, self.sync_each = self.sync_each, False
        try:
            yield
        finally:
            self.sync_each = previous

    def sync(self) -> None:
        """Make every object written so far durable (one syncfs for the store's filesystem)."""
        self._unsynced = False  # before the syncfs: a put racing it sets this again
        if self.tree.root.is_dir():
            sync_filesystem(self.tree.root)

    def sync_pending(self) -> None:
        """`sync()` if any object was published in deferred mode since the last sync."""
        if self._unsynced:
            self.sync()

    # Writing.

    def write_stream(self, source: BinaryIO, directory: Path, sha256: str | None, *,
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
                if self.sync_each:
                    os.fsync(target.fileno())
            final = self.tree.unchecked_path(encoded.sha256)
            self._ensure_dir(os.path.dirname(final))
            created = self._publish(staged, final)
        stored = encoded.stored_bytes if created else 0
        return PutResult(encoded.sha256, encoded.size, stored, created)

    def write_payload(self, sha256: str, payload: bytes) -> bool:
        """Write the already-encoded object of `sha256`; False if one was already there."""
        final = self.tree.unchecked_path(sha256)
        directory = os.path.dirname(final)
        with self._os_errors(sha256), self._staged(temp_name(directory, sha256)) as staged:
            temp = staged.path
            self._ensure_dir(directory)
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC,
                         OBJECT_MODE)
            try:
                _write_all(fd, payload)
                if self.sync_each:
                    os.fsync(fd)
            finally:
                os.close(fd)
            return self._publish(staged, final)

    def link_in(self, path: str, sha256: str, *,
                check: Callable[[os.stat_result], None]) -> bool | None:
        """Hardlink an already-hashed raw file into place (`check` sees the linked inode
        first); whether it created the object, or None if the filesystem refuses links (or
        the file's mode cannot be changed): the caller copies instead.

        The store then shares the inode with `path`, which is made read-only like every
        stored object: editing `path` in place would change the stored blob, so callers only
        allow this for files nobody edits.
        """
        final = self.tree.unchecked_path(sha256)
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
            check(linked)
            if linked.st_mode & 0o222 and not _make_read_only(temp, linked.st_mode):
                return None  # not ours to chmod: copy instead
            if self.sync_each:
                fsync_file(Path(temp))  # the source's data may not have reached the disk yet
            return self._publish(staged, final)

    def _create(self, temp: Path) -> int:
        """Create a temp file read-only (the mode applies to later opens; no chmod needed)."""
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
        try:
            return os.open(temp, flags, OBJECT_MODE)
        except FileNotFoundError:  # a known folder was removed behind our back
            self._known_dirs.discard(str(temp.parent))
            self._ensure_dir(temp.parent)
            return os.open(temp, flags, OBJECT_MODE)

    def _ensure_dir(self, directory: Path | str) -> None:
        directory = os.fspath(directory)
        if directory in self._known_dirs:
            return
        if self.sync_each:
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
        created = staged.published = publish(staged.path, final, sync=self.sync_each)
        if created and not self.sync_each:
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
            raise BlobStoreError(f"store {self.name!r}: cannot write {what} under "
                                 f"{self.tree.root}: {describe_os_error(exc)}") from exc


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


@dataclass
class _Staged:
    """A temp file being written (`ObjectWriter._staged`)."""

    path: str
    published: bool = False


def _make_read_only(path: Path | str, mode: int) -> bool:
    """chmod a-w (keeping the other bits); False if we may not (another user's file)."""
    try:
        os.chmod(path, mode & 0o7555)
    except PermissionError:
        return False
    return True
