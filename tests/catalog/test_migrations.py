from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect

from archive_pipelines.catalog import CatalogRepository, make_engine, upgrade_catalog
from archive_pipelines.catalog.migrate import current_revision, head_revision
from archive_pipelines.catalog.models import Base

TABLES = {"snapshot", "tag", "snapshot_tag", "archive_result", "blob", "snapshot_file", "store",
          "blob_copy", "crawl_session", "page_fetch"}


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


def test_sqlite_runs_in_wal_mode_with_a_busy_timeout(tmp_path) -> None:  # type: ignore[no-untyped-def]
    engine = make_engine(f"sqlite:///{tmp_path / 'c.sqlite3'}", busy_timeout_ms=1234)
    with engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 1234
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
    engine.dispose()


def test_fresh_catalog_status_is_empty(catalog: CatalogRepository) -> None:
    assert all(value == 0 for value in vars(catalog.status()).values())
