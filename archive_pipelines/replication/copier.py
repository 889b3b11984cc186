"""The archiver copier: copy blobs from one store to another, object by object.

Each object is streamed from the source through a size guard (a zstd bomb stops at the
blob's size) into `put_verified`, which publishes it atomically only once it hashes to its
name; a small blob whose bytes the source check kept goes to `put_verified_bytes`, which
hashes them again before publishing. Concurrent copiers of the same object are safe: the
first one publishes, the others find an identical object, which counts as success once it
checks out.

With a guard, a store-level failure (unreachable, refused, full) takes its store out for the
rest of the run, and the objects still queued for it are skipped instead of tried.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from archive_pipelines.blobstore import BlobStore, BlobStoreError, LocalBlobStore
from archive_pipelines.replication.faults import StoreFault, store_fault
from archive_pipelines.replication.report import one_line

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class CopyItem:
    sha256: str
    size: int  # raw size from the catalog: the decode guard and the expected length
    # The raw bytes as the source check verified them (small blobs): copied as they are,
    # without reading the source again.
    data: bytes | None = field(default=None, repr=False, compare=False)


@dataclass(frozen=True)
class CopyOutcome:
    """What happened to one object."""

    sha256: str
    size: int
    created: bool = False  # False with no error: an identical object was already there
    stored_bytes: int = 0  # bytes the destination now holds for it (0 if it already had it)
    error: str | None = None  # one line; None on success
    destination_corrupt: bool = False  # the destination already holds a bad object there
    fault: StoreFault | None = None  # the error was the store's, not this object's
    skipped: bool = False  # not tried: the source or destination was already out

    @property
    def ok(self) -> bool:
        return self.error is None


class CopyGuard(Protocol):
    """Whether copies between two stores may go on, and where store faults are reported."""

    def blocked(self) -> str | None: ...

    def fault(self, fault: StoreFault) -> None: ...


def copy_object(source: BlobStore, destination: BlobStore, item: CopyItem) -> CopyOutcome:
    """Copy one blob; never raises for store errors (they become the outcome's error)."""
    try:
        if item.data is not None:  # checked at the source: hash and size
            result = destination.put_verified_bytes(item.sha256, item.data)
        else:
            with source.open(item.sha256, max_size=item.size) as reader:
                result = destination.put_verified(item.sha256, reader, size=item.size)
        if result.created:
            return CopyOutcome(item.sha256, item.size, created=True,
                               stored_bytes=result.stored_bytes)
        # Something was already stored under the key (a concurrent copier, or a run killed
        # before it recorded its copy): it is only a copy if it is the blob.
        check = destination.check(item.sha256, expected_size=item.size)
    except (BlobStoreError, OSError) as exc:
        return CopyOutcome(item.sha256, item.size, error=one_line(exc),
                           fault=store_fault(exc, writing_to=destination.name))
    if check.ok:
        return CopyOutcome(item.sha256, item.size)
    return CopyOutcome(
        item.sha256, item.size, destination_corrupt=check.status == "corrupt",
        error=(f"store {destination.name!r}: blob {item.sha256} already has a {check.status} "
               f"object ({check.detail}); left in place (replication never overwrites)"))


def copy_objects(source: BlobStore, destination: BlobStore, items: Sequence[CopyItem], *,
                 width: int, pool: ThreadPoolExecutor | None = None,
                 guard: CopyGuard | None = None) -> list[CopyOutcome]:
    """Copy every item, `width` at a time; outcomes in the order of `items`.

    One failed object does not stop the others; a store-level failure does, through the
    `guard` (without one, every object is tried).
    """
    # Verified bytes to a local directory cost a few syscalls each: done on this thread.
    local = isinstance(destination, LocalBlobStore)

    def copy(item: CopyItem) -> CopyOutcome:
        if guard is None:
            return copy_object(source, destination, item)
        reason = guard.blocked()
        if reason is not None:
            return CopyOutcome(item.sha256, item.size, error=reason, skipped=True)
        outcome = copy_object(source, destination, item)
        if outcome.fault is not None:
            guard.fault(outcome.fault)
        return outcome

    return map_parallel(copy, items, width=width, pool=pool,
                        inline=lambda item: local and item.data is not None)


def map_parallel(fn: Callable[[T], R], items: Sequence[T], *, width: int,
                 pool: ThreadPoolExecutor | None = None,
                 inline: Callable[[T], bool] | None = None) -> list[R]:
    """`[fn(x) for x in items]` on `width` threads pulling from one shared queue.

    One task per thread, not per item: per-item futures would cost more than copying a
    small blob. Slow items (large blobs) do not hold up the rest of the queue. Items for
    which `inline(item)` is true run on the calling thread meanwhile: for small local work,
    the GIL hand-offs between threads cost more CPU than the threads save.
    """
    here = [inline(item) for item in items] if inline is not None else [False] * len(items)
    queued = [i for i, cheap in enumerate(here) if not cheap]
    if width <= 1 or not queued or len(items) == 1:
        return [fn(item) for item in items]
    mine = [i for i, cheap in enumerate(here) if cheap]
    results: list[R | None] = [None] * len(items)
    next_index = itertools.count()  # the shared queue: next() is atomic under the GIL

    def drain() -> None:
        while (index := next(next_index)) < len(queued):
            results[queued[index]] = fn(items[queued[index]])

    with contextlib.ExitStack() as stack:
        threads = min(width, len(queued))
        if pool is None:
            pool = stack.enter_context(
                ThreadPoolExecutor(max_workers=threads, thread_name_prefix="copier"))
        futures = [pool.submit(drain) for _ in range(threads)]
        try:
            for index in mine:
                results[index] = fn(items[index])
        finally:
            for future in futures:
                future.result()
    return results  # type: ignore[return-value]  # every slot was filled
