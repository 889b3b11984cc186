"""Migration 0008 (crawl requests) on a data dir made before it: every row of every table
intact, the two new tables empty, then a crawl queued, taken and finished (SQLite and
PostgreSQL).

The data dir is a real crawl's, ingested at head, its catalog taken back to 0007 by Alembic
(0008 adds tables only: the rows 0007's code wrote are the rows written here)."""

from __future__ import annotations

from pathlib import Path

from alembic import command

from archive_pipelines.catalog import Catalog, make_engine
from archive_pipelines.catalog.migrate import alembic_config
from archive_pipelines.crawls.requests import claim_crawl, finish_crawl, list_crawls, queue_crawl
from tests.helpers.captures import ingest_all, parts_of
from tests.helpers.catalog_tables import raw_tables, upgrade_to

BEFORE, AFTER = "0007_capture_urlkeys", "0008_crawl_requests"


def test_a_data_dir_from_before_crawl_requests_upgrades_intact(
        crawl_data: Path, catalog_url: str) -> None:
    with parts_of(crawl_data, catalog_url) as parts:
        ingest_all(parts, crawl_data)
        command.downgrade(alembic_config(parts.catalog.engine), BEFORE)
    old = raw_tables(catalog_url)
    assert old["page_fetch"] and "crawl_request" not in old and "crawler" not in old

    upgrade_to(catalog_url, AFTER)
    upgraded = raw_tables(catalog_url)
    assert upgraded.pop("crawl_request") == [] and upgraded.pop("crawler") == []
    assert upgraded == old

    catalog = Catalog(make_engine(catalog_url))
    try:
        queued = queue_crawl(catalog, {"seeds": ["http://example.test/"]}, name="weekly",
                             requested_by="test")
        taken = claim_crawl(catalog, worker="host:1")
        assert taken is not None and taken.crawl_id == queued.crawl_id
        assert finish_crawl(catalog, taken.id, worker="host:1", state="finished",
                            outcome={"stopped_because": "nothing left to fetch"})
        assert [r.state for r in list_crawls(catalog)] == ["finished"]
    finally:
        catalog.close()
    assert raw_tables(catalog_url)["page_fetch"] == old["page_fetch"]
