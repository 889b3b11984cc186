"""Migration 0010 (capture QA) on a data dir made before it: every row of every table intact,
then `capture_qa` takes checks of page captures (SQLite and PostgreSQL), refuses a score out
of [0, 1], and goes with its page capture.

The data dir is a real crawl's, ingested at head, its catalog taken back to 0009 by Alembic
(0010 only adds a table: the rows 0009's code wrote are the rows written here)."""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import MetaData, Table, delete, inspect, select

from archive_pipelines.archive_error import CatalogError
from archive_pipelines.catalog import Catalog, make_engine
from archive_pipelines.catalog.migrate import alembic_config
from archive_pipelines.catalog.qa_repository import QaCheck
from tests.helpers.captures import ingest_all, parts_of
from tests.helpers.catalog_tables import raw_tables, upgrade_to

BEFORE, AFTER = "0009_capture_kinds", "0010_capture_qa"


def _has_table(url: str) -> bool:
    engine = make_engine(url)
    try:
        return inspect(engine).has_table("capture_qa")
    finally:
        engine.dispose()


def test_a_data_dir_from_before_capture_qa_upgrades_intact(crawl_data: Path, catalog_url: str) -> None:
    with parts_of(crawl_data, catalog_url) as parts:
        ingest_all(parts, crawl_data)
        command.downgrade(alembic_config(parts.catalog.engine), BEFORE)
    old = raw_tables(catalog_url)
    assert "capture_qa" not in old and not _has_table(catalog_url)
    assert old["page_fetch"]

    upgrade_to(catalog_url, AFTER)
    now = raw_tables(catalog_url)
    assert now.pop("capture_qa") == []
    assert now == old

    page = next(row for row in old["page_fetch"] if row["kind"] == "page")
    catalog = Catalog.open(catalog_url)
    try:
        check = QaCheck(pixel_score=0.5, resources_expected=4, resources_replayed=1,
                        missing=("http://a.test/x.png",) * 80, leaks=0, score=0.25)
        catalog.qa.record(page["id"], check)
        latest = catalog.qa.latest([page["id"]])[page["id"]]
        assert latest.check.score == 0.25 and len(latest.check.missing) == 50  # bounded
        assert catalog.qa.below(0.9)[0] == 1 and catalog.qa.below(0.2)[0] == 0
        # Checked again: the newest check is the capture's score; the older one is kept.
        catalog.qa.record(page["id"], QaCheck(1.0, 4, 4, (), 0, score=1.0))
        assert catalog.qa.latest([page["id"]])[page["id"]].check.score == 1.0
        assert catalog.qa.below(0.9) == (0, [])
        assert len(raw_tables(catalog_url)["capture_qa"]) == 2
        with pytest.raises(CatalogError, match="ck_capture_qa_score"):
            catalog.qa.record(page["id"], QaCheck(None, 0, 0, (), 0, score=1.5))
        assert raw_tables(catalog_url)["page_fetch"] == old["page_fetch"]
        # A check goes with its page capture (ON DELETE CASCADE).
        table = Table("page_fetch", MetaData(), autoload_with=catalog.engine)
        with catalog.session() as session:
            session.execute(delete(table).where(table.c.id == page["id"]))
        with catalog.engine.connect() as conn:
            qa = Table("capture_qa", MetaData(), autoload_with=conn)
            assert conn.execute(select(qa)).all() == []
    finally:
        catalog.close()

    engine = make_engine(catalog_url)
    try:
        command.downgrade(alembic_config(engine), BEFORE)  # and back: the table goes
    finally:
        engine.dispose()
    assert not _has_table(catalog_url)
