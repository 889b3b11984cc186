"""`ReplicaSet`: every configured store opened, probed and given its catalog id.

The primary is a store like any other: any store holding a good copy can be a source, any
writable one a destination. A store that cannot be opened or reached (wrong bucket, no
credentials, a directory nobody can write) gets a one-line error; the others keep working.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from botocore.exceptions import BotoCoreError

from archive_pipelines.blobstore import BlobStore, BlobStoreError, LocalBlobStore, open_store
from archive_pipelines.catalog.files import ensure_store
from archive_pipelines.catalog.sessions import Catalog
from archive_pipelines.replication.report import one_line
from archive_pipelines.settings import Settings, StoreSettings

_PROBE_HASH = "0" * 64  # a key no real blob has: looking it up exercises bucket and credentials


@dataclass
class ReplicaStore:
    """One configured store: its catalog id, the opened store, and what it can do."""

    name: str
    store_id: int
    settings: StoreSettings
    store: BlobStore | None
    error: str | None = None  # why it cannot be read (None: readable)
    write_error: str | None = None  # why it cannot be written (None: writable)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _deferred: int = field(default=0, repr=False)
    _deferred_stack: contextlib.ExitStack | None = field(default=None, repr=False)

    @property
    def readable(self) -> bool:
        return self.store is not None and self.error is None

    @property
    def writable(self) -> bool:
        return self.readable and self.write_error is None

    @property
    def local(self) -> bool:
        """A directory on this machine: small reads and writes cost microseconds."""
        return isinstance(self.store, LocalBlobStore)

    def require(self) -> BlobStore:
        if self.store is None or self.error is not None:
            raise BlobStoreError(self.error or f"store {self.name!r} is not available")
        return self.store

    @contextlib.contextmanager
    def batched_writes(self) -> Iterator[None]:
        """Local stores skip per-object fsyncs inside (one `sync()` afterwards instead).

        Safe to nest and to enter from several threads: the store leaves batch mode when
        the last user leaves. Objects stay atomic (never partially visible) either way.
        """
        store = self.store
        if not isinstance(store, LocalBlobStore):
            yield
            return
        with self._lock:
            if self._deferred == 0:
                stack = contextlib.ExitStack()
                stack.enter_context(store.deferred_sync())
                self._deferred_stack = stack
            self._deferred += 1
        try:
            yield
        finally:
            with self._lock:
                self._deferred -= 1
                if self._deferred == 0 and self._deferred_stack is not None:
                    self._deferred_stack.close()
                    self._deferred_stack = None

    def sync(self) -> None:
        """Make every object written so far durable (local stores; S3 puts already are)."""
        if isinstance(self.store, LocalBlobStore):
            self.store.sync()


@dataclass
class ReplicaSet:
    """The configured stores by name, in settings order."""

    stores: dict[str, ReplicaStore]

    @classmethod
    def open(cls, catalog: Catalog, settings: Settings, *, probe: bool = True) -> ReplicaSet:
        """Open every store in `settings.stores` and sync their `store` rows in `catalog`.

        `probe` looks each store up once (a HEAD for S3, a permission check for a directory)
        so a misconfigured store is reported before any work is planned on it.
        """
        opened: dict[str, ReplicaStore] = {}
        for config in settings.stores:
            store: BlobStore | None = None
            error: str | None = None
            try:
                store = open_store(config, settings.data_dir)
            except (ValueError, BlobStoreError, BotoCoreError) as exc:  # bad endpoint, region
                error = f"store {config.name!r}: cannot open: {one_line(exc)}"
            with catalog.session() as session:
                store_id = ensure_store(session, name=config.name, kind=config.kind,
                                        location=_location(config, settings),
                                        codec=config.codec)
            replica = ReplicaStore(config.name, store_id, config, store, error)
            if store is not None and probe:
                _probe(replica, store)
            if replica.error is None and replica.write_error is None and not config.writable:
                replica.write_error = f"store {config.name!r} is read-only (writable = false)"
            opened[config.name] = replica
        return cls(opened)

    def __getitem__(self, name: str) -> ReplicaStore:
        return self.stores[name]

    def __iter__(self) -> Iterator[ReplicaStore]:
        return iter(self.stores.values())

    @property
    def store_ids(self) -> list[int]:
        """Catalog ids of every configured store (usable or not: their copies still count)."""
        return [s.store_id for s in self.stores.values()]

    @property
    def ids(self) -> dict[str, int]:
        return {s.name: s.store_id for s in self.stores.values()}

    @property
    def names(self) -> dict[int, str]:
        return {s.store_id: s.name for s in self.stores.values()}

    @property
    def errors(self) -> list[str]:
        """One line per store that cannot be read or written."""
        lines = []
        for replica in self.stores.values():
            if replica.error:
                lines.append(replica.error)
            elif replica.write_error and replica.settings.writable:
                lines.append(replica.write_error)  # writable=false is a choice, not an error
        return lines


def _location(config: StoreSettings, settings: Settings) -> str:
    if config.kind == "local":
        return str(settings.local_path(config.path))
    return f"s3://{config.bucket}/{config.prefix}".rstrip("/")


def _probe(replica: ReplicaStore, store: BlobStore) -> None:
    if isinstance(store, LocalBlobStore):
        replica.write_error = _local_write_error(replica.name, store.root)
        return
    try:
        store.exists(_PROBE_HASH)
    except BlobStoreError as exc:
        replica.error = one_line(exc)


def _local_write_error(name: str, root: Path) -> str | None:
    """Why nothing can be created under `root` (or its nearest existing ancestor), if so.

    access(2) also refuses writes to immutable directories and read-only filesystems,
    even for root, which a mode check would miss.
    """
    existing = root
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        return f"store {name!r}: cannot write under {root}: {existing} is not a directory"
    if os.access(existing, os.W_OK | os.X_OK):
        return None
    read_only_fs = bool(os.statvfs(existing).f_flag & os.ST_RDONLY)
    reason = "read-only file system" if read_only_fs else "permission denied"
    return f"store {name!r}: cannot write under {root}: {reason} ({existing})"

