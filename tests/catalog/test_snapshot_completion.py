"""Snapshot completion in the catalog: migration 0004 and the queries that find incomplete
snapshots (SQLite and PostgreSQL)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from alembic import command
from sqlalchemy import text

from archive_pipelines.catalog import Catalog, make_engine, upgrade_catalog
from archive_pipelines.catalog.migrate import alembic_config, current_revision

T0 = datetime(2026, 11, 25, 8, 0, tzinfo=UTC)


def test_0004_backfills_existing_snapshots_as_complete(catalog_url: str) -> None:
    engine = make_engine(catalog_url)
    command.upgrade(alembic_config(engine), "0003_captures")
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO snapshot (id, url, timestamp, created_at, created_by, "
                          "fs_version, updated_at) VALUES ('s1', 'https://e.x/', '1', "
                          "CURRENT_TIMESTAMP, 'u', 'cas', CURRENT_TIMESTAMP)"))
    command.upgrade(alembic_config(engine), "0004_snapshot_completion")
    assert current_revision(engine) == "0004_snapshot_completion"
    repository = Catalog(engine)
    with repository.reading() as tx:
        state = tx.snapshots.ingest_state("s1")
    assert state is not None and state.complete and state.ingest_source is None
    assert repository.snapshots.count_incomplete() == 0
    command.downgrade(alembic_config(engine), "0003_captures")  # and back
    upgrade_catalog(engine)
    assert repository.snapshots.count_incomplete() == 0
    engine.dispose()


def test_incomplete_snapshots_are_found_by_source_and_url_until_complete(
        catalog: Catalog) -> None:
    made = catalog.snapshots.add_snapshot(url="https://made.test/", timestamp="1")
    with catalog.transaction() as tx:
        first = tx.snapshots.add_incomplete_snapshot(url="https://a.test/", timestamp="2", title=None,
                                                     created_at=T0,
            created_by="alice", source="/src/a", extractor="wget", started_at=T0)
        second = tx.snapshots.add_incomplete_snapshot(url="https://a.test/", timestamp="3", title=None,
            created_at=T0 + timedelta(seconds=1), created_by="alice", source="/src/b",
            extractor="wget", started_at=T0)
    assert catalog.snapshots.count_incomplete() == 2  # a snapshot made otherwise is complete
    assert [s.snapshot_id for s in catalog.snapshots.incomplete_snapshots()] == [first, second]
    assert [s.snapshot_id for s in catalog.snapshots.incomplete_snapshots(limit=1)] == [first]
    with catalog.reading() as tx:
        found = tx.snapshots.find_incomplete(url="https://a.test/", source="/src/b")
        assert found is not None and found.snapshot_id == second
        assert tx.snapshots.find_incomplete(url="https://b.test/", source="/src/b") is None
        day = (T0, T0 + timedelta(seconds=1))
        assert tx.snapshots.count_incomplete(day) == 1
    with catalog.transaction() as tx:
        tx.snapshots.mark_complete(second, T0 + timedelta(minutes=1))
        tx.snapshots.start_ingest(made.id, source="/src/c", extractor="dom",
                                started_at=T0)
    with catalog.reading() as tx:
        assert tx.snapshots.find_incomplete(url="https://a.test/", source="/src/b") is None
        state = tx.snapshots.ingest_state(made.id)
    assert state is not None and not state.complete
    assert (state.ingest_source, state.ingest_extractor) == ("/src/c", "dom")
    assert {s.snapshot_id for s in catalog.snapshots.incomplete_snapshots()} == {first, made.id}
