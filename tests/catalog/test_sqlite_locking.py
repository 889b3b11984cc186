"""SQLite: readers never block writers; writers take the lock up front."""

import threading
from pathlib import Path

import pytest
from sqlalchemy import text

from archive_pipelines.catalog import make_engine, upgrade_catalog
from archive_pipelines.catalog.engine import reader

pytestmark = pytest.mark.unit


def test_a_long_read_does_not_block_a_writer(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'c.sqlite3'}", busy_timeout_ms=2_000)
    upgrade_catalog(engine)
    with reader(engine).begin() as read:
        read.execute(text("SELECT count(*) FROM blob")).scalar()
        done = threading.Event()

        def write() -> None:
            with engine.begin() as conn:
                conn.execute(text("INSERT INTO tag (name) VALUES ('x')"))
            done.set()

        writer = threading.Thread(target=write)
        writer.start()
        writer.join(timeout=10)
        assert done.is_set(), "the writer waited on a reader"
    engine.dispose()
