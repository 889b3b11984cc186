"""Per-file work of a large ingest (store puts, aliases, view links) in worker processes.

Ingest is system-call bound: every file costs a hash, a few stats, a create or link and four
symlinks with their folders. Threads in one process serialise the Python between those calls
on the GIL and spend a fifth of the time handing it over, so a large ingest uses one worker
process per core instead. Workers only touch the store and the view farm; the catalog stays
in the parent, which commits each batch after the workers' puts and syncs.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from functools import partial
from pathlib import Path
from typing import NamedTuple, TypeVar

from archive_pipelines.archive_error import DiskFull, disk_full_message, is_disk_full
from archive_pipelines.blobstore import BlobStore, BlobStoreError, LocalBlobStore, PutResult
from archive_pipelines.views import UnsafePathError, ViewFarm, validate_extractor, validate_relative_path

T = TypeVar("T")
R = TypeVar("R")
CHUNKS_PER_WORKER = 2  # per batch and phase: a worker that finishes early takes another chunk


class PutRequest(NamedTuple):
    """One file to store: what ingest validated and where it is (a tuple and a string path:
    cheap to send to a worker)."""

    extractor: str
    relative_path: str
    source: str


def put_one(store: BlobStore, request: PutRequest, *, allow_hardlink: bool
            ) -> tuple[str, PutResult] | str:
    """Validate and store one file: (normalized relative path, put result) or an error line.

    A full store is no error of this file: it raises `DiskFull`, which ends the ingest (every
    file after it would fail the same way, and its snapshot must stay incomplete). So does a
    remote store that failed as a whole (unreachable, refusing): its error is raised."""
    try:
        rel = validate_relative_path(request.relative_path)
        validate_extractor(request.extractor)
        return rel, store.put_file(request.source, allow_hardlink=allow_hardlink)
    except (UnsafePathError, BlobStoreError) as exc:
        if is_disk_full(exc):
            raise DiskFull(disk_full_message(exc)) from exc
        if _store_failed(exc):
            raise
        return f"{request.source}: {exc}"
    except OSError as exc:  # unreadable, vanished, special file
        if is_disk_full(exc):
            raise DiskFull(disk_full_message(exc)) from exc
        return f"{request.source}: {exc.strerror or exc}"


def _store_failed(exc: Exception) -> bool:
    """Whether `exc` is a failure of an S3 store itself, not of one file. (Its module is
    looked up, not imported: only a process that opened an S3 store has it, and botocore
    is slow to import in the worker processes.)"""
    s3_errors = sys.modules.get("archive_pipelines.blobstore.s3_errors")
    return s3_errors is not None and isinstance(exc, s3_errors.S3StoreError)


# A file link: (link path, sha256), or (link path, sha256, alias extension) when that is not
# the link name's (`ViewFarm.ensure_link`).
FileLink = tuple[str, str] | tuple[str, str, str]


def link_one(farm: ViewFarm, store: LocalBlobStore, link: FileLink) -> str:
    """Make one file link, and the alias it points at if that is missing: an ingest killed
    after its commit, before the aliases, leaves blobs the next run finds stored (so it
    makes no alias for them) and links that would dangle; a link named with an extension
    points at the alias with that extension (`ViewFarm.ensure_file_link`)."""
    ext = link[2] if len(link) == 3 else None
    return farm.ensure_file_link(link[0], link[1], store.object_path(link[1]), ext=ext)


def folder_link_one(farm: ViewFarm, link: tuple[str, str]) -> str:
    return farm.ensure_folder_link(*link)


def alias_one(farm: ViewFarm, store: LocalBlobStore, sha256: str) -> str:
    return farm.aliases.ensure(sha256, store.local_path(sha256))


# -- inside a worker process -------------------------------------------------------------

_store: LocalBlobStore | None = None
_farm: ViewFarm | None = None


def _start_worker(parent: int, store_root: str, codec: str, *, zstd_level: int,
                  archive_root: str) -> None:
    global _store, _farm
    die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles ^C and stops us
    # No fsyncs here: the parent syncs the filesystem once per batch, before its commit.
    _store = LocalBlobStore(Path(store_root), codec=codec, zstd_level=zstd_level,
                            sync_each=False)
    _farm = ViewFarm(Path(archive_root), Path(store_root))


def die_with_parent(parent: int) -> None:
    """Exit (within half a second) once the parent is gone, so a killed ingest leaves no
    writer behind. A watchdog thread, not prctl(PR_SET_PDEATHSIG): that fires when the
    parent *thread* that started us exits, and pools outlive the threads that start workers.
    `parent` comes from the parent itself: one that died while we were starting is noticed."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)
    threading.Thread(target=watch, name="parent-watchdog", daemon=True).start()


def _put_chunk(requests: list[PutRequest], *, allow_hardlink: bool
               ) -> list[tuple[str, PutResult] | str]:
    assert _store is not None
    return [put_one(_store, request, allow_hardlink=allow_hardlink) for request in requests]


def _link_chunk(links: list[tuple[str, str]]) -> list[str]:
    assert _farm is not None
    assert _store is not None
    return [link_one(_farm, _store, link) for link in links]


def _folder_link_chunk(links: list[tuple[str, str]]) -> list[str]:
    assert _farm is not None
    return [folder_link_one(_farm, link) for link in links]


def _call_chunk(items: list[T], fn: Callable[[LocalBlobStore, ViewFarm, T], R]) -> list[R]:
    assert _store is not None and _farm is not None
    return [fn(_store, _farm, item) for item in items]


def _alias_chunk(hashes: list[str]) -> list[str]:
    assert _farm is not None and _store is not None
    return [alias_one(_farm, _store, sha256) for sha256 in hashes]


# -- in the parent --------------------------------------------------------------------------

def may_start_processes() -> bool:
    """False in a daemonic process, which multiprocessing forbids to start children: a task
    of a Celery worker's prefork pool (the cluster profile's steps). Work that would use
    worker processes does it in the calling process there."""
    return not multiprocessing.current_process().daemon


@contextlib.contextmanager
def main_module_hidden() -> Iterator[None]:
    """Start spawned workers without re-running the parent's main module in each of them.

    `spawn` imports the parent's `__main__` (script or `-m` module) in every child so that
    functions defined there can be unpickled. Our workers run only this module's functions,
    and a main such as Dagster's CLI or a benchmark script costs each worker a second of
    imports. multiprocessing reads `__main__.__spec__` / `__file__` when a process starts
    (`spawn.get_preparation_data`), so they are hidden for exactly that moment."""
    main = sys.modules.get("__main__")
    if main is None:
        yield
        return
    saved: dict[str, object] = {name: main.__dict__[name] for name in ("__spec__", "__file__")
             if name in main.__dict__}
    main.__spec__ = None
    main.__dict__.pop("__file__", None)
    try:
        yield
    finally:
        main.__dict__.update(saved)


class FileWorkers:
    """A pool of worker processes bound to one store and view farm (`close()` when done).

    Processes start with `spawn` (never fork a process that may run threads) and die with
    the parent; each call splits its items into contiguous chunks and keeps their order.
    """

    def __init__(self, store: LocalBlobStore, farm: ViewFarm, processes: int) -> None:
        self.processes = processes
        self._pool = ProcessPoolExecutor(
            max_workers=processes, mp_context=multiprocessing.get_context("spawn"),
            initializer=partial(_start_worker, os.getpid(), str(store.root), store.codec,
                                zstd_level=store.zstd_level, archive_root=str(farm.archive_root)))
        # Start them all now, from this thread, rather than one by one from whichever thread
        # submits later. Not waited for: they start while the caller works on. A worker that
        # cannot start breaks the pool, and the first call fails with BrokenProcessPool.
        with main_module_hidden():
            for _ in range(processes):
                self._pool.submit(os.getpid)

    def pids(self) -> list[int]:
        """The worker processes' pids (started ones only), sorted."""
        return sorted(self._pool._processes or {})  # no public accessor

    @property
    def broken(self) -> bool:
        """A worker died (or could not start): every call fails with BrokenProcessPool."""
        return bool(self._pool._broken)  # no public accessor

    def close(self, *, wait: bool = True) -> None:
        self._pool.shutdown(wait=wait, cancel_futures=True)

    def submit_puts(self, requests: Sequence[PutRequest], *, allow_hardlink: bool
                    ) -> Callable[[], list[tuple[str, PutResult] | str]]:
        """Start storing `requests`; returns a function that waits for the results."""
        return self._submit(partial(_put_chunk, allow_hardlink=allow_hardlink), requests)

    def start_links(self, links: list[tuple[str, str]], aliases: Sequence[str],
                    folder_links: Sequence[tuple[str, str]] = ()
                    ) -> Callable[[], Counter[str]]:
        """Make aliases, file links and folder links (`storage.linking.ensure_links` in the
        workers) without waiting: they are queued in that order, and the function returned
        waits for their outcome counts.
        The workers take the chunks in order, so a link is rarely made before what it
        points at (its alias, or a folder link's folder); when it is, the target appears
        a moment later. A crash in between leaves what `verify --fix` repairs."""
        aliased = self._submit(_alias_chunk, list(aliases))
        files = self._submit(_link_chunk, links)
        folders = self._submit(_folder_link_chunk, folder_links)

        def outcomes() -> Counter[str]:
            aliased()
            counts = Counter(files())
            counts.update(folders())
            return counts
        return outcomes

    def map(self, fn: Callable[[LocalBlobStore, ViewFarm, T], R], items: Sequence[T]) -> list[R]:
        """`[fn(store, farm, item) for item in items]` in the workers, in order. `fn` must be
        a module-level function of a module that imports no catalog (it is imported by
        name in each worker)."""
        return self._submit(_call_chunk, items, fn)()

    def _submit(self, fn: Callable[..., list[R]], items: Sequence[T], *args: object
                ) -> Callable[[], list[R]]:
        if not items:
            return list
        chunks = self.processes * CHUNKS_PER_WORKER
        step = max(1, -(-len(items) // chunks))
        futures: list[Future[list[R]]] = [
            self._pool.submit(fn, list(items[i:i + step]), *args)
            for i in range(0, len(items), step)]

        def results() -> list[R]:
            out: list[R] = []
            for future in futures:
                out.extend(future.result())
            return out
        return results
