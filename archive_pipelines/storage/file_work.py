"""`FileWork`: the threads and worker processes that do an ingest's per-file work.

Imports no catalog: it is built beside the catalog (`storage.assembly`), and the worker
processes it starts import `storage.file_workers` only.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from functools import cached_property
from typing import TypeVar

from archive_pipelines.blobstore import LocalBlobStore
from archive_pipelines.storage.file_workers import FileWorkers, may_start_processes
from archive_pipelines.storage.primary import PrimaryStore
from archive_pipelines.views.viewset import ViewSet

IO_THREADS = 4
# Uploads to an S3 primary wait on the network, not the disk or the GIL: many in flight, as
# many as botocore's connection pool of a client keeps open (10 by default; more threads
# would open and drop a connection per request).
REMOTE_THREADS = 10
MAX_AUTO_PROCESSES = 8
T = TypeVar("T")
R = TypeVar("R")


class FileWork:
    """An io thread pool, and a pool of worker processes on the primary store and the view
    farm for large ingests (`processes`: the setting; None means one per core, at most 8).
    A primary that is not a local folder (S3) gets no worker processes: its puts wait on
    the network, so they run on `REMOTE_THREADS` threads (`submit_remote`) instead.

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

    @cached_property
    def remote_pool(self) -> ThreadPoolExecutor:
        """Threads for requests to a remote primary (uploads, lookups)."""
        return ThreadPoolExecutor(max_workers=REMOTE_THREADS, thread_name_prefix="storage-net")

    def submit_remote(self, fn: Callable[[T], R], items: Sequence[T]) -> Callable[[], list[R]]:
        """Start `[fn(x) for x in items]` on the remote pool, one task per item (requests take
        uneven times); returns the wait for the results, in order. The first failure cancels
        the items not started (an unreachable store would fail each after its timeouts) and
        is raised once the running ones have finished: none is left running behind the caller."""
        futures = [self.remote_pool.submit(fn, item) for item in items]

        def results() -> list[R]:
            done, _running = wait(futures, return_when=FIRST_EXCEPTION)
            if any(future.exception() is not None for future in done):
                for future in futures:
                    future.cancel()
                wait(futures)
            return [future.result() for future in futures]
        return results

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
        """Worker processes for a large ingest (see `file_workers`); < 2 means none.

        None in a daemonic process, which may start none: a task of a Celery worker's
        prefork pool (the cluster profile's steps) does the work in its own process."""
        if self._workers_failed or not self._primary.is_local or not may_start_processes():
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
        store = self._primary.store
        if not isinstance(store, LocalBlobStore):
            raise TypeError(f"worker processes work on a local primary store, not {store!r}")
        if self._workers is None:
            self._workers = FileWorkers(store, self._views.farm,
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
