"""Migration 0005 (page titles) on a data dir made before it: every row intact, titles NULL,
and the next ingest keeps titles (SQLite and PostgreSQL).

The data dir is a real crawl's, ingested with its catalog at 0004 as that code left it: the
crawl is ingested, then the catalog is taken back to 0004 by Alembic (0004's ingest wrote the
same rows less the title, which is all this change adds to it), and the tables are read
without the models (which already know `title`)."""

from __future__ import annotations

import shutil
from pathlib import Path

from archive_pipelines.captures.lookup import find_url
from archive_pipelines.captures.record_files import read_record
from archive_pipelines.datadir import initialize
from archive_pipelines.settings import CatalogSettings, Settings
from tests.helpers.captures import assert_storage_clean, capture_rows, ingest_all, parts_of
from tests.helpers.catalog_tables import ingested_but_the_last_segment, raw_tables, upgrade_to

BEFORE, AFTER = "0004_snapshot_completion", "0005_page_titles"


def test_a_data_dir_from_before_titles_upgrades_intact_and_then_keeps_titles(
        crawl_data: Path, catalog_url: str, tmp_path: Path) -> None:
    held, aside = ingested_but_the_last_segment(crawl_data, catalog_url, tmp_path / "held",
                                                back_to=BEFORE)
    old = raw_tables(catalog_url)
    assert old["page_fetch"] and "title" not in old["page_fetch"][0]  # the 0004 schema

    upgrade_to(catalog_url, AFTER)
    upgraded = raw_tables(catalog_url)
    assert {name: rows for name, rows in upgraded.items() if name != "page_fetch"} == {
        name: rows for name, rows in old.items() if name != "page_fetch"}
    assert [{k: v for k, v in row.items() if k != "title"} for row in upgraded["page_fetch"]] \
        == old["page_fetch"]
    assert all(row["title"] is None for row in upgraded["page_fetch"])

    shutil.move(aside, held)
    initialize(Settings(data_dir=crawl_data, catalog=CatalogSettings(url=catalog_url)))  # head
    with parts_of(crawl_data, catalog_url) as parts:
        ingest_all(parts, crawl_data)  # the next ingest, with the titles its records carry
        rows = capture_rows(parts.catalog)
        old_ids = {row["id"] for row in old["page_fetch"]}
        assert [{k: v for k, v in row.items() if k not in ("title", "urlkey")} for row in rows
                if row["id"] in old_ids] == old["page_fetch"]
        new = [row for row in rows if row["id"] not in old_ids]
        assert new and all(row["index_path"].endswith(held.name) for row in new)
        titled = [row for row in new if row["title"] is not None]
        assert titled and all(row["kind"] == "page" for row in titled)
        for row in new:
            record = read_record(crawl_data, row["index_path"], row["record_offset"])
            wanted = record["title"] if row["kind"] == "page" and row["request_index"] == 0 else None
            assert row["title"] == wanted
        # Lookups: an old capture says no title, a new one its title.
        old_page = next(r for r in old["page_fetch"] if r["kind"] == "page")
        _canonical, found = find_url(parts.catalog, old_page["url"])
        assert [c.title for c in found if c.id == old_page["id"]] == [None]
        _canonical, found = find_url(parts.catalog, titled[0]["url"])
        assert [c.title for c in found if c.id == titled[0]["id"]] == [titled[0]["title"]]
        assert_storage_clean(parts, crawl_data)
