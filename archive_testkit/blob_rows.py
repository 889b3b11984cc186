"""Bulk catalog rows for benchmarks: a million blobs and their copies in seconds.

PostgreSQL gets COPY; SQLite gets executemany in large batches. The rows are catalog-only
(no bytes in any store): they exist to time the director's queries at scale.
"""

from __future__ import annotations

import hashlib
import io
import random
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime

from sqlalchemy import Engine, func, select, text

from archive_pipelines.catalog.models import Blob

_ROWS_PER_BATCH = 50_000


def fake_sha256(index: int) -> str:
    return hashlib.sha256(f"seeded-blob-{index}".encode()).hexdigest()


def seed_blobs(engine: Engine, n: int, stores: Sequence[int], *, replicated_fraction: float,
               seed: int = 0) -> tuple[int, int]:
    """Insert `n` referenced blobs, present at `stores[0]`; a `replicated_fraction` of them
    also present at every other store. Returns the (first, last) new blob id.
    """
    if not stores:
        raise ValueError("seed_blobs needs at least one store id")
    with engine.connect() as conn:
        start = int(conn.scalar(select(func.coalesce(func.max(Blob.id), 0))) or 0) + 1
    rng = random.Random(seed)
    now = datetime.now(UTC)
    ids = range(start, start + n)
    replicated = {i for i in ids if rng.random() < replicated_fraction}
    blob_rows = ((i, fake_sha256(i), 1000 + i % 9000, "application/octet-stream", 1)
                 for i in ids)
    copy_rows = ((i, store, "present") for i in ids for k, store in enumerate(stores)
                 if k == 0 or i in replicated)
    if engine.dialect.name == "postgresql":
        _copy_pg(engine, blob_rows, copy_rows, now=now.isoformat(), rebuild=start - 1 < n)
    else:
        # The format SQLAlchemy's SQLite DateTime writes (UtcDateTime keeps UTC, no zone).
        _insert_sqlite(engine, blob_rows, copy_rows, now=now.strftime("%Y-%m-%d %H:%M:%S.%f"))
    return start, start + n - 1


def _batches(rows: Iterator[tuple[object, ...]]) -> Iterator[list[tuple[object, ...]]]:
    batch: list[tuple[object, ...]] = []
    for row in rows:
        batch.append(row)
        if len(batch) >= _ROWS_PER_BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


# Secondary indexes rebuilt after a large load (a sort) instead of n random inserts.
_REBUILT_INDEXES = (
    ("ALTER TABLE blob DROP CONSTRAINT blob_sha256_key",
     "ALTER TABLE blob ADD CONSTRAINT blob_sha256_key UNIQUE (sha256)"),
    ("DROP INDEX ix_blob_copy_store_status",
     "CREATE INDEX ix_blob_copy_store_status ON blob_copy (store_id, status, blob_id)"),
)


def _copy_pg(engine: Engine, blob_rows: Iterator[tuple[object, ...]],
             copy_rows: Iterator[tuple[object, ...]], *, now: str, rebuild: bool) -> None:
    """COPY in one transaction (so a failure leaves the catalog as it was)."""
    raw = engine.raw_connection()
    try:
        cur = raw.cursor()
        cur.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
        if cur.fetchone() == (True,):
            # Skip per-row foreign-key triggers (superusers only): several times faster.
            cur.execute("SET LOCAL session_replication_role = replica")
        if rebuild:
            for drop, _create in _REBUILT_INDEXES:
                cur.execute(drop)
        for table, columns, rows in (
                ("blob", "id, sha256, size, mime_type, ref_count, created_at", blob_rows),
                ("blob_copy", "blob_id, store_id, status, mtime", copy_rows)):
            for batch in _batches(rows):
                buffer = io.StringIO("".join(
                    "\t".join(map(str, row)) + f"\t{now}\n" for row in batch))
                cur.copy_expert(f"COPY {table} ({columns}) FROM STDIN", buffer)
        if rebuild:
            cur.execute("SET LOCAL maintenance_work_mem = '256MB'")
            for _drop, create in _REBUILT_INDEXES:
                cur.execute(create)
        # Explicit ids bypassed the sequence: move it past them.
        cur.execute("SELECT setval(pg_get_serial_sequence('blob', 'id'), "
                    "(SELECT max(id) FROM blob))")
        raw.commit()
        # As autovacuum would: statistics, and the visibility map index-only scans rely on.
        driver = raw.driver_connection
        driver.autocommit = True  # type: ignore[union-attr]
        try:
            cur = raw.cursor()
            cur.execute("VACUUM ANALYZE blob")
            cur.execute("VACUUM ANALYZE blob_copy")
        finally:
            driver.autocommit = False  # type: ignore[union-attr]
    finally:
        raw.close()


def _insert_sqlite(engine: Engine, blob_rows: Iterator[tuple[object, ...]],
                   copy_rows: Iterator[tuple[object, ...]], *, now: str) -> None:
    with engine.begin() as conn:
        for batch in _batches(blob_rows):
            conn.exec_driver_sql(
                "INSERT INTO blob (id, sha256, size, mime_type, ref_count, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?)", [(*row, now) for row in batch])
        for batch in _batches(copy_rows):
            conn.exec_driver_sql(
                "INSERT INTO blob_copy (blob_id, store_id, status, mtime) VALUES (?, ?, ?, ?)",
                [(*row, now) for row in batch])
        conn.execute(text("ANALYZE"))
