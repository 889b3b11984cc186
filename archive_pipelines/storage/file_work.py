"""`FileWork`: the threads and worker processes that do an ingest's per-file work.

Imports no catalog: it is built beside the catalog (`storage.assembly`), and the worker
processes it starts import `storage.file_workers` only.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import cached_property
from typing import TypeVar

from archive_pipelines.storage.file_workers import FileWorkers
from archive_pipelines.storage.primary import PrimaryStore
from archive_pipelines.views.viewset import ViewSet

IO_THREADS = 4
MAX_AUTO_PROCESSES = 8
T = TypeVar("T")
R = TypeVar("R")


class FileWork:
    """An io thread pool, and a pool of worker processes on the primary store and the view
    farm for large ingests (`processes`: the setting; None means one per core, at most 8).

    Whoever builds it stops the worker processes with `close()` (or `with work:`).
    """

    def __init__(self, primary: PrimaryStore, views: ViewSet, processes: int | None) -> None:
        self._primary, self._views, self._configured = primary, views, processes
        self._workers: FileWorkers | None = None
        self._workers_failed = False

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
        if self._workers_failed:
            return 0
        if self._configured is None:
            return min(os.cpu_count() or 1, MAX_AUTO_PROCESSES)
        return self._configured

    def file_workers(self) -> FileWorkers:
        """The pool of `ingest_processes` workers on the primary store and view farm, started
        on first use and kept for later ingests (a migration ingests batch after batch).

        Whoever built the FileWork stops the pool with `close()` when done. Garbage
        collection only asks it to stop, without waiting: a process that then exits at once
        races the pool's manager thread, which is still closing its wakeup pipe, with the
        interpreter's exit hook writing to it (CPython 3.11: `OSError: [Errno 9] Bad file
        descriptor` from concurrent/futures/process.py)."""
        if self._workers is None:
            self._workers = FileWorkers(self._primary.store, self._views.farm,
                                        max(1, self.ingest_processes))
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
        pool's manager thread are gone. Idempotent."""
        if self._workers is not None:
            self._workers.close()
            self._workers = None

    def __enter__(self) -> FileWork:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
