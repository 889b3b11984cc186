"""Migration 0007 (capture URL keys) on a data dir made before it: every row intact, every
capture keyed by `surt.urlkey` of its URL (in several batches), the column NOT NULL and
indexed, replay lookups answering from it, and the next ingest keying its own captures
(SQLite and PostgreSQL).

The data dir is a real crawl's, ingested, then taken back to 0006 by Alembic (0006's ingest
wrote the same rows less the key, which is all this change adds), and the tables are read
without the models (which already know `urlkey`)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from sqlalchemy import inspect

from archive_pipelines.catalog import make_engine
from archive_pipelines.datadir import initialize
from archive_pipelines.settings import CatalogSettings, Settings
from archive_pipelines.surt import surt, urlkey
from tests.helpers.captures import assert_storage_clean, capture_rows, ingest_all, parts_of
from tests.helpers.catalog_tables import ingested_but_the_last_segment, raw_tables, upgrade_to

BEFORE, AFTER = "0006_capture_sources", "0007_capture_urlkeys"


def test_a_data_dir_from_before_urlkeys_upgrades_keyed_and_intact(
        crawl_data: Path, catalog_url: str, tmp_path: Path) -> None:
    held, aside = ingested_but_the_last_segment(crawl_data, catalog_url, tmp_path / "held",
                                                back_to=BEFORE)
    old = raw_tables(catalog_url)
    assert len(old["page_fetch"]) > 7 and "urlkey" not in old["page_fetch"][0]  # the 0006 schema

    upgrade_to(catalog_url, AFTER, urlkey_batch_rows=7)  # several batches, the last one short

    upgraded = raw_tables(catalog_url)
    assert {name: rows for name, rows in upgraded.items() if name != "page_fetch"} == {
        name: rows for name, rows in old.items() if name != "page_fetch"}
    assert [{k: v for k, v in row.items() if k != "urlkey"} for row in upgraded["page_fetch"]] \
        == old["page_fetch"]
    assert [row["urlkey"] for row in upgraded["page_fetch"]] == [
        surt(row["url"]) for row in old["page_fetch"]]  # the crawl's URLs are all short
    engine = make_engine(catalog_url)
    try:
        schema = inspect(engine)
        column = next(c for c in schema.get_columns("page_fetch") if c["name"] == "urlkey")
        assert column["nullable"] is False
        assert {"name": "ix_page_fetch_urlkey", "column_names": ["urlkey", "fetched_ms", "id"]} in [
            {"name": ix["name"], "column_names": ix["column_names"]}
            for ix in schema.get_indexes("page_fetch")]
    finally:
        engine.dispose()

    shutil.move(aside, held)
    initialize(Settings(data_dir=crawl_data, catalog=CatalogSettings(url=catalog_url)))  # head
    with parts_of(crawl_data, catalog_url) as parts:
        ingest_all(parts, crawl_data)  # the next ingest keys its captures itself
        rows = capture_rows(parts.catalog)
        old_ids = {row["id"] for row in old["page_fetch"]}
        new = [row for row in rows if row["id"] not in old_ids]
        assert new and all(row["index_path"].endswith(held.name) for row in new)
        assert all(row["urlkey"] == urlkey(row["url"]) for row in rows)
        # A page captured before the upgrade is found by its key, with its neighbours.
        page = next(r for r in old["page_fetch"] if r["kind"] == "page" and r["status_code"] == 200)
        with parts.catalog.reading() as tx:
            timeline = tx.replay.timeline(urlkey(page["url"]))
            nearest = tx.replay.nearest(urlkey(page["url"]), at_ms=page["fetched_ms"])
        assert page["id"] in [c.id for c in timeline]
        assert nearest is not None and nearest.capture.fetched_ms == page["fetched_ms"]
        assert_storage_clean(parts, crawl_data)


@pytest.mark.parametrize("catalog_url", ["sqlite"], indirect=True)
def test_an_empty_catalog_upgrades_through_urlkeys(catalog_url: str) -> None:
    upgrade_to(catalog_url, BEFORE)
    upgrade_to(catalog_url, AFTER, urlkey_batch_rows=1)
    assert raw_tables(catalog_url)["page_fetch"] == []
