"""The sensors' pure decisions: keyset batches over (fs_version, id), and archive/ changes."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from sqlalchemy import insert, text

from archive_pipelines.catalog.adoption_repository import migration_query
from archive_pipelines.catalog.models import Snapshot, utcnow
from archive_pipelines.migration import next_migration_batches, orphan_folders_changed
from archive_pipelines.migration.sensor_logic import parse_cursor
from archive_pipelines.storage.assembly import StorageParts

LABELS = ("0.4", "0.6", "organized", "cas", "0.x", "legacy", "0.9", "cas", "0.8.3")


def fill(storage: StorageParts, count: int) -> dict[str, str]:
    rows = [{"id": f"{i:08d}-0000-4000-8000-000000000000", "url": f"https://e.com/{i}",
             "timestamp": str(1_600_000_000 + i), "fs_version": LABELS[i % len(LABELS)],
             "created_at": utcnow(), "updated_at": utcnow(), "created_by": "t"} for i in range(count)]
    with storage.catalog.transaction() as tx:
        tx.session.execute(insert(Snapshot), rows)
    return {row["id"]: row["fs_version"] for row in rows}


def test_batches_page_through_every_snapshot_behind_once_per_pass(storage: StorageParts) -> None:
    labels = fill(storage, 40)
    behind = {sid for sid, label in labels.items() if label not in ("cas", "0.x")}
    seen: list[str] = []
    cursor, ticks = "", 0
    while True:
        batches, cursor = next_migration_batches(storage.catalog, cursor=cursor, batch_size=3, max_batches=2)
        ticks += 1
        assert len(batches) <= 2 and all(1 <= len(b) <= 3 for b in batches)
        seen += [sid for batch in batches for sid in batch]
        if not cursor:
            break
    assert sorted(seen) == sorted(behind) and len(seen) == len(set(seen))
    assert ticks == len(behind) // 6 + 1  # the last tick finds the end and wraps the cursor
    # Oldest layouts first, ids ascending within a layout.
    order = ("0.4", "0.6", "0.8.3", "0.9", "organized", "legacy")
    assert seen == sorted(seen, key=lambda sid: (order.index(labels[sid]), sid))
    # The next pass starts over; a stale or foreign cursor starts over too.
    assert next_migration_batches(storage.catalog, cursor="", batch_size=100, max_batches=1)[0][0] == seen
    assert parse_cursor("bogus") == parse_cursor("nope|x") == (0, "")


def test_the_batch_query_is_an_index_range_scan(storage: StorageParts) -> None:
    fill(storage, 50)
    query = migration_query("0.6", "00000010", 100)
    with storage.catalog.transaction() as tx:
        dialect = tx.session.get_bind().dialect
        sql = str(query.compile(dialect=dialect, compile_kwargs={"literal_binds": True}))
        if dialect.name == "sqlite":
            plan = " ".join(str(row) for row in tx.session.execute(text(f"EXPLAIN QUERY PLAN {sql}")))
        else:
            tx.session.execute(text("SET LOCAL enable_seqscan = off"))
            plan = " ".join(row[0] for row in tx.session.execute(text(f"EXPLAIN {sql}")))
    assert "ix_snapshot_fs_version_id" in plan, plan
    assert "TEMP B-TREE" not in plan and "Sort" not in plan, plan  # no sort: the index is ordered


@pytest.mark.unit
def test_orphan_folders_changed_is_one_stat(tmp_path: Path) -> None:
    archive = tmp_path / "archive"
    assert orphan_folders_changed(archive, 0) == (False, 0)
    archive.mkdir()
    changed, mtime = orphan_folders_changed(archive, 0)
    assert changed and mtime == os.stat(archive).st_mtime_ns
    assert orphan_folders_changed(archive, mtime) == (False, mtime)
    time.sleep(0.01)
    (archive / "1600000000").mkdir()
    assert orphan_folders_changed(archive, mtime)[0]
    _, mtime = orphan_folders_changed(archive, mtime)
    (archive / "1600000000" / "new-file").write_bytes(b"x")  # inside a folder: not a new folder
    assert orphan_folders_changed(archive, mtime) == (False, mtime)
