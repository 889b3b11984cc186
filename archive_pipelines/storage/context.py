"""`Storage`: the catalog engine, primary store and view farm that storage operations share."""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TypeVar

from sqlalchemy import Engine

from archive_pipelines.blobstore import LocalBlobStore, open_store
from archive_pipelines.catalog.engine import make_engine
from archive_pipelines.catalog.files import ensure_store
from archive_pipelines.catalog.sessions import Transactions
from archive_pipelines.datadir import DataDir
from archive_pipelines.settings import Settings
from archive_pipelines.storage.file_workers import FileWorkers
from archive_pipelines.views import SnapshotPlace, ViewFarm, file_view, folder_links

IO_THREADS = 4
MAX_AUTO_PROCESSES = 8
T = TypeVar("T")
R = TypeVar("R")


@dataclass
class Storage(Transactions):
    """What ingest, verify, gc and rebuild need; open with `Storage.open(settings)`.

    `session()` / `read_session()` (from Transactions) are catalog transactions.
    """

    settings: Settings
    engine: Engine
    views: tuple[str, ...]

    def __post_init__(self) -> None:
        Transactions.__init__(self, self.engine)
        self._workers: FileWorkers | None = None
        self._workers_failed = False

    @classmethod
    def open(cls, settings: Settings, *, engine: Engine | None = None,
             views: tuple[str, ...] | None = None) -> Storage:
        """Storage on `engine` (the Dagster resources and the CLI pass the process's shared
        one, `catalog.shared_engine`); without one, an engine of its own (scripts, tests)."""
        engine = engine or make_engine(settings.catalog_url,
                                       busy_timeout_ms=settings.catalog.sqlite_busy_timeout_ms)
        enabled = tuple(settings.views.enabled) if views is None else views
        return cls(settings=settings, engine=engine, views=enabled)

    @cached_property
    def file_view(self) -> str | None:
        """The view with a link per file (`views.file_view`), fixed by the enabled views of
        the settings whichever subset `views` this Storage works on."""
        return file_view(self.settings.views.enabled) or file_view(self.views)

    def folder_links(self, place: SnapshotPlace) -> list[tuple[str, str]]:
        """The snapshot's folder links in `views` (see `views.folder_links`)."""
        return [] if self.file_view is None else folder_links(self.file_view, self.views, place)

    @property
    def layout(self) -> DataDir:
        return DataDir(self.settings.data_dir)

    @cached_property
    def primary(self) -> LocalBlobStore:
        """The primary store: always local (settings enforce it), so views can link into it."""
        store = open_store(self.settings.primary_store, self.settings.data_dir)
        assert isinstance(store, LocalBlobStore)
        return store

    @cached_property
    def primary_root(self) -> Path:
        return self.settings.local_path(self.settings.primary_store.path)

    @cached_property
    def io_pool(self) -> ThreadPoolExecutor:
        """Threads for file work (hashing, copying, symlinks release the GIL)."""
        return ThreadPoolExecutor(max_workers=IO_THREADS, thread_name_prefix="storage-io")

    def map_io(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        """`[fn(x) for x in items]` on the io pool, one contiguous slice per thread."""
        if len(items) < 2 * IO_THREADS:
            return [fn(item) for item in items]
        step = -(-len(items) // IO_THREADS)
        slices = [items[i:i + step] for i in range(0, len(items), step)]
        results: list[R] = []
        for part in self.io_pool.map(lambda chunk: [fn(item) for item in chunk], slices):
            results.extend(part)
        return results

    @property
    def ingest_processes(self) -> int:
        """Worker processes for a large ingest (see `file_workers`); < 2 means none."""
        configured = self.settings.storage.ingest_processes
        if self._workers_failed:
            return 0
        if configured is None:
            return min(os.cpu_count() or 1, MAX_AUTO_PROCESSES)
        return configured

    def file_workers(self) -> FileWorkers:
        """The pool of `ingest_processes` workers on the primary store and view farm, started
        on first use and kept for later ingests (a migration ingests batch after batch).

        Whoever opened the Storage stops the pool with `close()` (or `with storage:`) when
        done. Garbage collection only asks it to stop, without waiting: a process that then
        exits at once races the pool's manager thread, which is still closing its wakeup
        pipe, with the interpreter's exit hook writing to it (CPython 3.11:
        `OSError: [Errno 9] Bad file descriptor` from concurrent/futures/process.py)."""
        if self._workers is None:
            self._workers = FileWorkers(self.primary, self.farm, max(1, self.ingest_processes))
            weakref.finalize(self, self._workers.close, wait=False)
        return self._workers

    def started_file_workers(self) -> FileWorkers | None:
        """The pool, if an earlier ingest started it and it still works; else None."""
        if self._workers is None or self._workers.broken:
            return None
        return self._workers

    def workers_failed(self) -> None:
        """The worker processes could not start: stop them, and use threads from now on."""
        self._workers_failed = True
        self.close()

    def close(self) -> None:
        """Stop the worker processes, if any were started, and wait until they and the
        pool's manager thread are gone (the engine is the caller's). Idempotent."""
        if self._workers is not None:
            self._workers.close()
            self._workers = None

    def __enter__(self) -> Storage:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    @cached_property
    def farm(self) -> ViewFarm:
        return ViewFarm(self.layout.archive, self.primary_root)

    @cached_property
    def primary_store_id(self) -> int:
        store = self.settings.primary_store
        with self.session() as session:
            return ensure_store(session, name=store.name, kind=store.kind,
                                location=str(self.primary_root), codec=store.codec)
