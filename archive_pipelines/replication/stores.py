"""`ReplicaSet`: every configured store opened, probed and given its catalog id.

The primary is a store like any other: any store holding a good copy can be a source, any
writable one a destination. A store that cannot be opened or reached (wrong bucket, no
credentials, a directory nobody can write) gets a one-line error; the others keep working.
A store that fails later in the run (`skip`) is out from then on, in every thread.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from botocore.exceptions import BotoCoreError

from archive_pipelines.blobstore import BlobStore, BlobStoreError, LocalBlobStore, open_store
from archive_pipelines.catalog import Catalog, retry_on_connection_loss
from archive_pipelines.replication.faults import StoreFault
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

    @property
    def problem(self) -> str | None:
        """Why the store is out (unreadable, or refusing the writes it is configured for)."""
        if self.error:
            return self.error
        return self.write_error if self.settings.writable else None

    def require(self) -> BlobStore:
        if self.store is None or self.error is not None:
            raise BlobStoreError(self.error or f"store {self.name!r} is not available")
        return self.store

    def skip(self, fault: StoreFault) -> bool:
        """Take the store out for the rest of the run (for writes only, if that is all it
        refused); False if it already was."""
        with self._lock:
            if self.error is not None:
                return False
            if fault.writes_only:
                if self.write_error is not None:
                    return False
                self.write_error = fault.reason
            else:
                self.error = fault.reason
            return True

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
            store_id = retry_on_connection_loss(
                functools.partial(_ensure_store_row, catalog, config, settings),
                what=f"recording store {config.name!r}")
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
        """One line per store that cannot be read or written (writable=false is a choice,
        not an error)."""
        return list(self.problems.values())

    @property
    def problems(self) -> dict[str, str]:
        """{store: why it is out} for every store that cannot be read or written."""
        return {replica.name: replica.problem for replica in self.stores.values()
                if replica.problem is not None}

    @property
    def out(self) -> set[str]:
        """Stores configured writable that cannot take copies now."""
        return {r.name for r in self.stores.values() if r.settings.writable and not r.writable}

    def skip(self, fault: StoreFault) -> bool:
        """Take the fault's store out for the run; False if it was already out (or unknown)."""
        replica = self.stores.get(fault.store)
        return replica is not None and replica.skip(fault)

    def guard(self, source: str, destination: str) -> PairGuard:
        return PairGuard(self[source], self[destination])


@dataclass(frozen=True)
class PairGuard:
    """Copies from one store to another stop being tried once either is out."""

    source: ReplicaStore
    destination: ReplicaStore

    def blocked(self) -> str | None:
        """Why copies between the pair are skipped now (None: go ahead)."""
        return self.source.error or self.destination.error or self.destination.write_error

    def fault(self, fault: StoreFault) -> None:
        for replica in (self.source, self.destination):
            if replica.name == fault.store:
                replica.skip(fault)


def _ensure_store_row(catalog: Catalog, config: StoreSettings, settings: Settings) -> int:
    with catalog.transaction() as tx:
        return tx.copies.ensure_store(name=config.name, kind=config.kind,
                            location=settings.store_location(config), codec=config.codec)


def _probe(replica: ReplicaStore, store: BlobStore) -> None:
    if isinstance(store, LocalBlobStore):
        replica.write_error = _local_write_error(replica.name, store.root)
        return
    from archive_pipelines.blobstore.s3 import S3BlobStore  # boto3 is slow to import

    try:
        if isinstance(store, S3BlobStore):
            store.probe()
        else:
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

