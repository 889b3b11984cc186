"""Helpers for the capture tests: the storage parts of a crawled data dir and its capture store,
the catalog's captures, sessions and blobs as plain data, and the segment files on disk."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Table, select

from archive_pipelines.captures.record_files import read_record
from archive_pipelines.captures.segment_files import find_segments
from archive_pipelines.captures.segment_ingest import CapturePrimary, ingest_crawl
from archive_pipelines.catalog import Catalog
from archive_pipelines.catalog.models import Blob, BlobCopy, CrawlSegment, CrawlSession, PageFetch, Store
from archive_pipelines.datadir import initialize
from archive_pipelines.settings import CatalogSettings, Settings
from archive_pipelines.storage.assembly import StorageParts, open_storage
from archive_pipelines.storage.verify import verify_storage


def open_parts(data_dir: Path, catalog_url: str = "") -> StorageParts:
    """The storage parts of a crawled data dir (SQLite catalog unless `catalog_url`)."""
    settings = Settings(data_dir=data_dir, catalog=CatalogSettings(url=catalog_url))
    initialize(settings)
    return open_storage(settings)


def capture_primary(parts: StorageParts) -> CapturePrimary:
    return CapturePrimary(parts.primary.store, parts.primary.store_id, parts.views.farm,
                        parts.views.crawl)


def ingested_copy(source: Path, target: Path) -> Path:
    """A copy of the crawled data dir `source` at `target` (symlinks as symlinks), every
    segment ingested into its SQLite catalog; `target`."""
    shutil.copytree(source, target, symlinks=True)
    with parts_of(target) as parts:
        ingest_all(parts, target)
    return target


def ingest_all(parts: StorageParts, data_dir: Path) -> None:
    report = ingest_crawl(parts.catalog, capture_primary(parts), data_dir)
    assert report.ingested and not report.failed, report.to_dict()


def session_ids(catalog: Catalog) -> list[str]:
    with catalog.reading() as tx:
        return sorted(tx.session.scalars(select(CrawlSession.id)))


def capture_rows(catalog: Catalog) -> list[dict[str, Any]]:
    """Every page_fetch row as a dict, by id."""
    table = table_of(PageFetch)
    with catalog.reading() as tx:
        return [dict(row._mapping) for row in tx.session.execute(select(table).order_by(table.c.id))]


def records_of(data_dir: Path, rows: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """The record behind every capture (read_record), by capture id."""
    return {row["id"]: read_record(data_dir, row["index_path"], row["record_offset"])
            for row in rows}


def catalog_dump(catalog: Catalog) -> dict[str, list[tuple[Any, ...]]]:
    """The captures, sessions, segment ledger, blobs (ref counts) and blob copies, with blob
    ids as sha256 and without timestamps that tell only when a row was written."""
    with catalog.reading() as tx:
        shas = {int(i): str(s) for i, s in tx.session.execute(select(Blob.id, Blob.sha256))}

        def rows(model: type, drop: tuple[str, ...] = (),
                 blob_ids: tuple[str, ...] = ()) -> list[tuple[Any, ...]]:
            table = table_of(model)
            out = []
            for row in tx.session.execute(select(table)):
                data = dict(row._mapping)
                for name in blob_ids:
                    data[name] = None if data[name] is None else shas[data[name]]
                out.append(tuple((k, v) for k, v in sorted(data.items()) if k not in drop))
            return sorted(out, key=repr)

        blobs = [(*row[:-1], row[-1] is not None) for row in tx.session.execute(
            select(Blob.sha256, Blob.size, Blob.mime_type, Blob.ref_count,
                   Blob.unreferenced_since))]
        return {
            "page_fetch": rows(PageFetch, blob_ids=("body_blob_id",)),
            "crawl_session": rows(CrawlSession, blob_ids=("compacted_blob_id", "index_blob_id")),
            "crawl_segment": rows(CrawlSegment, blob_ids=("blob_id",)),
            "blob": sorted(blobs, key=repr),
            "blob_copy": rows(BlobCopy, drop=("mtime",),
                              blob_ids=("blob_id",)),
        }


def assert_storage_clean(parts: StorageParts, data_dir: Path) -> None:
    report = verify_storage(parts.catalog, parts.primary, parts.views, deep=True,
                            data_dir=data_dir)
    assert report.problems == 0, report.examples
    with parts.catalog.reading() as tx:
        assert list(tx.blobs.count_references()) == []


def segment_files(data_dir: Path) -> dict[str, bytes]:
    """Every segment file under sessions/ and its bytes, by data-dir relative path."""
    found, _skipped = find_segments(data_dir)
    return {segment.relative: segment.path.read_bytes() for segment in found}


def compacted_files(data_dir: Path) -> list[str]:
    folder = data_dir / "sessions" / "compacted"
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def table_of(model: type) -> Table:
    table = model.__table__  # type: ignore[attr-defined]
    assert isinstance(table, Table)
    return table


@contextmanager
def parts_of(data_dir: Path, catalog_url: str = "") -> Iterator[StorageParts]:
    """`open_parts`, its engine disposed afterwards."""
    with open_parts(data_dir, catalog_url) as parts:
        try:
            yield parts
        finally:
            parts.catalog.engine.dispose()


def catalog_state(catalog: Catalog) -> dict[str, list[tuple[Any, ...]]]:
    """The capture tables and blobs by their natural keys (segment path, blob sha256), with
    no surrogate ids or ingest times: what two ingests of the same segments must agree on."""
    with catalog.reading() as tx:
        shas = dict(tx.session.execute(select(Blob.id, Blob.sha256)).all())
        paths = dict(tx.session.execute(select(CrawlSegment.id, CrawlSegment.path)).all())
        stores = dict(tx.session.execute(select(Store.id, Store.name)).all())
        skip = {"id", "segment_id", "body_blob_id"}
        names = [c.name for c in PageFetch.__table__.columns if c.name not in skip]
        fetches = sorted(
            (*(getattr(row, n) for n in names), paths[row.segment_id],
             shas.get(row.body_blob_id) if row.body_blob_id is not None else None)
            for row in tx.session.scalars(select(PageFetch)))
        segments = sorted(
            (s.path, s.sha256, s.session_id, shas.get(s.blob_id) if s.blob_id else None,
             s.records, s.rejected, s.cut_bytes) for s in tx.session.scalars(select(CrawlSegment)))
        sessions = sorted(
            (s.id, s.started_at, s.ended_at, s.index_dir, s.pages, s.compacted_path)
            for s in tx.session.scalars(select(CrawlSession)))
        blobs = sorted((b.sha256, b.size, b.mime_type, b.ref_count, b.unreferenced_since is None)
                       for b in tx.session.scalars(select(Blob)))
        copies = sorted((shas[c.blob_id], stores[c.store_id], c.status)
                        for c in tx.session.scalars(select(BlobCopy)))
    return {"page_fetch": fetches, "crawl_segment": segments, "crawl_session": sessions,
            "blob": blobs, "blob_copy": copies}
