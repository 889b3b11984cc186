"""Helpers for the capture tests: the storage parts of a crawled data dir and its capture store."""

from __future__ import annotations

from pathlib import Path

from archive_pipelines.captures.segment_ingest import CapturePrimary
from archive_pipelines.datadir import initialize
from archive_pipelines.settings import CatalogSettings, Settings
from archive_pipelines.storage.assembly import StorageParts, open_storage


def open_parts(data_dir: Path, catalog_url: str = "") -> StorageParts:
    """The storage parts of a crawled data dir (SQLite catalog unless `catalog_url`)."""
    settings = Settings(data_dir=data_dir, catalog=CatalogSettings(url=catalog_url))
    initialize(settings)
    return open_storage(settings)


def capture_primary(parts: StorageParts) -> CapturePrimary:
    return CapturePrimary(parts.primary.store, parts.primary.store_id, parts.views.farm,
                        parts.views.crawl)
