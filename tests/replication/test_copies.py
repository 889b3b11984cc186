"""blob_copy queries on SQLite and PostgreSQL: the director scan, upserts, counts, seeding."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from sqlalchemy import Engine, select, update
from sqlalchemy.orm import Session

from archive_pipelines.catalog import Catalog, CatalogTransaction
from archive_pipelines.catalog.models import Blob, BlobCopy, utcnow
from archive_testkit.blob_rows import fake_sha256, seed_blobs


@pytest.fixture
def engine(catalog: Catalog) -> Engine:
    return catalog.engine


@pytest.fixture
def stores(engine: Engine) -> list[int]:
    with Session(engine) as session, session.begin():
        return [CatalogTransaction(session).copies.ensure_store(name=n, kind="local", location=f"/x/{n}",
                                                                codec="zstd")
                for n in ("primary", "r1", "r2")]


@pytest.fixture
def session(engine: Engine) -> Iterator[Session]:
    with Session(engine) as session, session.begin():
        yield session


def scan_all(session: Session, store_ids: list[int], retention: int, *, scan_limit: int,
             limit: int) -> list[int]:
    """Every needy blob id, page by page, as the director walks them."""
    found: list[int] = []
    cursor = 0
    fresh_since = utcnow() - timedelta(hours=1)
    for _ in range(1000):
        page = CatalogTransaction(session).copies.find_needy_blobs(store_ids=store_ids, retention=retention,
                                fresh_since=fresh_since, cursor=cursor, scan_limit=scan_limit,
                                limit=limit)
        assert len(page.blobs) <= limit
        assert all(cursor < blob_id for blob_id, _sha in page.blobs)
        found.extend(blob_id for blob_id, _sha in page.blobs)
        if page.reached_end:
            return found
        assert page.scanned_to is not None and page.scanned_to > cursor
        cursor = page.scanned_to
    raise AssertionError("the scan never reached the end")


def test_seeded_blobs_and_the_needy_scan(engine: Engine, stores: list[int]) -> None:
    first, last = seed_blobs(engine, 500, stores, replicated_fraction=0.6, seed=3)
    assert (first, last) == (1, 500)
    with Session(engine) as session:
        replicated = {bid for (bid,) in session.execute(
            select(BlobCopy.blob_id).where(BlobCopy.store_id == stores[1]))}
        assert 200 < len(replicated) < 400
        expected = sorted(set(range(first, last + 1)) - replicated)
        for scan_limit, limit in ((1000, 1000), (64, 10), (7, 3)):
            assert scan_all(session, stores, 2, scan_limit=scan_limit, limit=limit) == expected
        assert scan_all(session, stores, 1, scan_limit=50, limit=50) == []
        assert CatalogTransaction(session).copies.count_under_replicated(store_ids=stores,
                                                                         retention=2) == len(expected)
        assert CatalogTransaction(session).copies.count_under_replicated(store_ids=stores,
                                                                         retention=3) == len(expected)
        assert CatalogTransaction(session).copies.status_counts() == {stores[0]: {"present": 500},
                                          stores[1]: {"present": len(replicated)},
                                          stores[2]: {"present": len(replicated)}}
        # Copies at stores no longer configured do not count.
        assert CatalogTransaction(session).copies.count_under_replicated(store_ids=stores[:1],
                                                                         retention=2) == 500
        sha = session.scalar(select(Blob.sha256).where(Blob.id == 7))
        assert sha == fake_sha256(7)
    # A second load appends after the first; ordinary inserts still get fresh ids.
    assert seed_blobs(engine, 10, stores[:1], replicated_fraction=0.0) == (501, 510)
    with Session(engine) as session, session.begin():
        session.add(Blob(sha256="f" * 64, size=1, ref_count=1))
        session.flush()
        assert session.scalar(select(Blob.id).where(Blob.sha256 == "f" * 64)) == 511


def test_unreferenced_blobs_and_fresh_ongoing_copies_are_not_needy(
        engine: Engine, stores: list[int], session: Session) -> None:
    seed_blobs(engine, 4, stores[:1], replicated_fraction=0.0)
    now = utcnow()
    session.execute(update(Blob).where(Blob.id == 1).values(ref_count=0))
    CatalogTransaction(session).copies.upsert_copies(store_id=stores[1], blob_ids=[2], status="ongoing",
                  mtime=now - timedelta(minutes=5))
    CatalogTransaction(session).copies.upsert_copies(store_id=stores[1], blob_ids=[3], status="ongoing",
                  mtime=now - timedelta(minutes=90))
    page = CatalogTransaction(session).copies.find_needy_blobs(store_ids=stores, retention=2,
                            fresh_since=now - timedelta(hours=1), cursor=0, scan_limit=100,
                            limit=100)
    assert [bid for bid, _sha in page.blobs] == [3, 4]
    assert page.reached_end and page.scanned_to == 4


def test_upserts_insert_update_and_keep_present(engine: Engine, stores: list[int],
                                                session: Session) -> None:
    seed_blobs(engine, 3, stores[:1], replicated_fraction=0.0)
    t0 = utcnow()
    t1 = t0 + timedelta(seconds=1)
    store = stores[1]
    CatalogTransaction(session).copies.upsert_copies(store_id=store, blob_ids=[1, 2], status="present",
                                                     mtime=t0)
    CatalogTransaction(session).copies.upsert_copies(store_id=store, blob_ids=[2, 3], status="ongoing",
                                                     mtime=t1,
                  keep_present=True)
    copies = CatalogTransaction(session).copies.copies_of([1, 2, 3])
    assert copies[1][store].status == "present"
    assert copies[2][store].status == "present"  # keep_present: neither status nor mtime moved
    assert session.scalar(select(BlobCopy.mtime).where(BlobCopy.blob_id == 2,
                                                       BlobCopy.store_id == store)) == t0
    assert copies[3][store].status == "ongoing" and copies[3][store].mtime == t1
    assert copies[1][store].mtime is None  # only an ongoing copy's age matters to the planner
    CatalogTransaction(session).copies.upsert_copies(store_id=store, blob_ids=[2], status="corrupted",
                                                     mtime=t1)
    assert CatalogTransaction(session).copies.copies_of([2])[2][store].status == "corrupted"
    # Conditional moves: only rows in the expected status (and mtime) change.
    assert CatalogTransaction(session).copies.update_copies(store_id=store, blob_ids=[1, 3], status="missing",
                         mtime=t1, only_if="ongoing", only_if_mtime=t0) == 0
    assert CatalogTransaction(session).copies.update_copies(store_id=store, blob_ids=[1, 3], status="missing",
                         mtime=t1, only_if="ongoing", only_if_mtime=t1) == 1
    states = CatalogTransaction(session).copies.copies_of([1, 3])
    assert states[1][store].status == "present" and states[3][store].status == "missing"
    with pytest.raises(ValueError):
        CatalogTransaction(session).copies.upsert_copies(store_id=store, blob_ids=[1], status="lost",
                                                         mtime=t1)
