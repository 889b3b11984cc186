import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect

from archive_pipelines.catalog import Catalog, head_revision, make_engine, upgrade_catalog
from archive_pipelines.catalog.migrate import current_revision
from archive_pipelines.catalog.models import Base

TABLES = {"snapshot", "tag", "snapshot_tag", "archive_result", "blob", "snapshot_file", "store",
          "blob_copy", "crawl_session", "crawl_segment", "page_fetch", "snapshot_entry"}


def test_migrations_create_the_model_schema(catalog_url: str) -> None:
    engine = make_engine(catalog_url)
    assert current_revision(engine) is None
    assert upgrade_catalog(engine) == (None, head_revision())
    assert upgrade_catalog(engine) == (head_revision(), head_revision())  # idempotent
    assert set(inspect(engine).get_table_names()) >= TABLES
    with engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    assert diff == [], f"models and migrations disagree: {diff}"
    engine.dispose()


@pytest.mark.unit
def test_sqlite_runs_in_wal_mode_with_a_busy_timeout(tmp_path) -> None:  # type: ignore[no-untyped-def]
    engine = make_engine(f"sqlite:///{tmp_path / 'c.sqlite3'}", busy_timeout_ms=1234)
    with engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 1234
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
    engine.dispose()


def test_fresh_catalog_status_is_empty(catalog: Catalog) -> None:
    assert all(value == 0 for value in vars(catalog.status()).values())


def test_0002_keeps_every_existing_view_path_and_allows_one_row_per_path(catalog_url: str) -> None:
    """Files recorded before 0002 (`extractor` + path inside it) keep their view paths: the
    whole path `<extractor>/<path>` becomes the relative path, unique per snapshot."""
    from alembic import command
    from sqlalchemy import text
    from sqlalchemy.exc import IntegrityError

    from archive_pipelines.catalog.migrate import alembic_config

    engine = make_engine(catalog_url)
    command.upgrade(alembic_config(engine), "0001_initial")
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO snapshot (id, url, timestamp, created_at, created_by, "
                          "fs_version, updated_at) VALUES ('s1', 'https://e.x/', '1', "
                          "CURRENT_TIMESTAMP, 'u', 'cas', CURRENT_TIMESTAMP)"))
        conn.execute(text("INSERT INTO blob (sha256, size, mime_type, ref_count, created_at) "
                          f"VALUES ('{'a' * 64}', 1, 'x', 2, CURRENT_TIMESTAMP)"))
        blob = conn.execute(text("SELECT id FROM blob")).scalar()
        for extractor, rel in (("wget", "a/index.html"), ("index", "index.json")):
            conn.execute(text("INSERT INTO snapshot_file (snapshot_id, blob_id, extractor, "
                              "relative_path, created_at) VALUES ('s1', :b, :e, :r, "
                              "CURRENT_TIMESTAMP)"), {"b": blob, "e": extractor, "r": rel})

    upgrade_catalog(engine)

    with engine.connect() as conn:
        rows = sorted(conn.execute(text("SELECT extractor, relative_path FROM snapshot_file")).all())
    assert [tuple(r) for r in rows] == [("index", "index/index.json"), ("wget", "wget/a/index.html")]
    with pytest.raises(IntegrityError), engine.begin() as conn:  # one row per path now
        conn.execute(text("INSERT INTO snapshot_file (snapshot_id, blob_id, extractor, "
                          "relative_path, created_at) VALUES ('s1', :b, 'dom', "
                          "'wget/a/index.html', CURRENT_TIMESTAMP)"), {"b": blob})
    engine.dispose()
