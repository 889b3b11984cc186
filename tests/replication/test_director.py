"""The director: keyset pagination over the catalog, bounded scans, cursor wraparound."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from archive_pipelines.replication import ReplicaSet, plan_batches
from archive_pipelines.storage.assembly import StorageParts
from archive_testkit.blob_rows import fake_sha256, seed_blobs
from tests.helpers.replication import local_replica, open_with_replicas

HOUR = timedelta(hours=1)


@pytest.fixture
def catalog_only(data_dir: Path, catalog_url: str) -> Iterator[tuple[StorageParts, ReplicaSet]]:
    storage = open_with_replicas(data_dir, [local_replica("r1"), local_replica("r2")],
                           catalog_url=catalog_url)
    try:
        yield storage, ReplicaSet.open(storage.catalog, storage.settings)
    finally:
        storage.close()
        storage.catalog.engine.dispose()


def test_pages_through_everything_once_then_wraps(catalog_only: tuple[StorageParts, ReplicaSet]
                                                  ) -> None:
    storage, replicas = catalog_only
    seed_blobs(storage.catalog.engine, 95, replicas.store_ids[:1], replicated_fraction=0.0)
    cursor, ticks = 0, 0
    seen: list[str] = []
    while True:
        tick = plan_batches(storage.catalog, replicas, retention=2, max_age=HOUR, batch_size=10,
                            cursor=cursor, max_batches=2)
        ticks += 1
        assert all(len(batch) <= 10 for batch in tick.batches) and len(tick.batches) <= 2
        seen.extend(h for batch in tick.batches for h in batch)
        cursor = tick.next_cursor
        if tick.wrapped:
            break
    assert ticks == 5 and cursor == 0
    assert seen == [fake_sha256(i) for i in range(1, 96)]  # in id order, each once
    again = plan_batches(storage.catalog, replicas, retention=2, max_age=HOUR, batch_size=10,
                         cursor=cursor, max_batches=2)
    assert again.batches[0][0] == fake_sha256(1)  # the next cycle starts over


def test_a_tick_scans_a_bounded_window(catalog_only: tuple[StorageParts, ReplicaSet]) -> None:
    storage, replicas = catalog_only
    seed_blobs(storage.catalog.engine, 200, replicas.store_ids, replicated_fraction=0.9, seed=5)
    cursor, found, scans = 0, 0, []
    for _ in range(100):
        tick = plan_batches(storage.catalog, replicas, retention=2, max_age=HOUR, batch_size=1000,
                            cursor=cursor, max_batches=1, scan_limit=30)
        scans.append(tick.scanned)
        found += tick.blobs
        cursor = tick.next_cursor
        if tick.wrapped:
            break
    assert scans == [30] * 6 + [20]
    assert 5 < found < 40
    # Fully replicated: nothing to do, and the cursor still walks round.
    full = plan_batches(storage.catalog, replicas, retention=1, max_age=HOUR, batch_size=10,
                        cursor=0, max_batches=3, scan_limit=1000)
    assert full.batches == [] and full.wrapped and full.scanned == 200


def test_an_empty_catalog_and_a_cursor_past_the_end(catalog_only: tuple[StorageParts, ReplicaSet]
                                                    ) -> None:
    storage, replicas = catalog_only
    tick = plan_batches(storage.catalog, replicas, retention=2, max_age=HOUR, batch_size=5)
    assert (tick.batches, tick.next_cursor, tick.scanned, tick.wrapped) == ([], 0, 0, True)
    seed_blobs(storage.catalog.engine, 3, replicas.store_ids[:1], replicated_fraction=0.0)
    late = plan_batches(storage.catalog, replicas, retention=2, max_age=HOUR, batch_size=5, cursor=99)
    assert late.batches == [] and late.next_cursor == 0 and late.wrapped
