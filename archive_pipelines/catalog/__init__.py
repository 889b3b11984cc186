"""The catalog: its one entry (`Catalog`, one repository per concept over one engine), the
rows its repositories take and return, engines and migrations.

Names load on first use (PEP 562): settings and the CLI's cheap commands take a URL helper or
a row type without importing SQLAlchemy's ORM and every repository."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from archive_pipelines.catalog.adoption_repository import (
        DuplicateKey,
        EntryRow,
        FileRecord,
        MergedRows,
        RecordedSnapshot,
        ResultRow,
        SnapshotRow,
        folder_claimant,
    )
    from archive_pipelines.catalog.blob_repository import BlobCounts, BlobRow, WaitingBlob, grace_cutoff
    from archive_pipelines.catalog.capture_repository import (
        AlreadyCompacted,
        Body,
        Capture,
        CaptureRow,
        RecordedSegment,
        SegmentLedgerRow,
        SegmentRows,
        SessionRow,
        status_class,
    )
    from archive_pipelines.catalog.copy_repository import CopyState, NeedyPage
    from archive_pipelines.catalog.crawl_request_repository import Crawler, CrawlRequest
    from archive_pipelines.catalog.day_repository import DayStats, FirstPage, Saving, SiteCaptures
    from archive_pipelines.catalog.engine import (
        POSTGRES_CONNECT_ARGS,
        connection_lost,
        make_engine,
        retry_on_connection_loss,
        shared_engine,
    )
    from archive_pipelines.catalog.entry import Catalog, CatalogStatus, CatalogTransaction
    from archive_pipelines.catalog.export_repository import CaptureScope, ExportCapture
    from archive_pipelines.catalog.file_repository import FileEntry, PlaceRow, SnapshotEntries, SnapshotFiles
    from archive_pipelines.catalog.fs_versions import (
        CAS,
        FS_VERSIONS,
        LEGACY_VERSIONS,
        NO_FOLDER,
        ORGANIZED,
        V0_4,
        V0_6,
        V0_8,
        V0_8_3,
        V0_9,
        WRITABLE_FS_VERSIONS,
        UnknownFsVersionError,
        checked_fs_version,
    )
    from archive_pipelines.catalog.import_repository import SnapshotWarc
    from archive_pipelines.catalog.migrate import upgrade_catalog
    from archive_pipelines.catalog.models import (
        COPY_STATUSES,
        EXCHANGE_KINDS,
        RENDERING_KINDS,
        new_id,
        utcnow,
    )
    from archive_pipelines.catalog.qa_repository import BrowserPage, QaCheck, RecordedCheck
    from archive_pipelines.catalog.ref_counts import ApplyReport, BlobEntry
    from archive_pipelines.catalog.replay_repository import (
        CaptureKey,
        KeyRange,
        Nearest,
        ReplayRepository,
        capture_key,
        key_after_prefix,
    )
    from archive_pipelines.catalog.schema_revision import head_revision
    from archive_pipelines.catalog.snapshot_repository import (
        IngestState,
        ResultDetails,
        SnapshotDetails,
        normalized_id,
    )
    from archive_pipelines.catalog.urls import normalize_catalog_url, redact_url, sqlite_file

# Public name -> the catalog module that defines it.
_LAZY: dict[str, str] = {
    "COPY_STATUSES": "models",
    "EXCHANGE_KINDS": "models",
    "RENDERING_KINDS": "models",
    "new_id": "models",
    "utcnow": "models",
    "DuplicateKey": "adoption_repository",
    "EntryRow": "adoption_repository",
    "FileRecord": "adoption_repository",
    "MergedRows": "adoption_repository",
    "RecordedSnapshot": "adoption_repository",
    "ResultRow": "adoption_repository",
    "SnapshotRow": "adoption_repository",
    "folder_claimant": "adoption_repository",
    "BrowserPage": "qa_repository",
    "QaCheck": "qa_repository",
    "RecordedCheck": "qa_repository",
    "BlobCounts": "blob_repository",
    "BlobRow": "blob_repository",
    "WaitingBlob": "blob_repository",
    "grace_cutoff": "blob_repository",
    "AlreadyCompacted": "capture_repository",
    "Body": "capture_repository",
    "Capture": "capture_repository",
    "CaptureRow": "capture_repository",
    "RecordedSegment": "capture_repository",
    "SegmentLedgerRow": "capture_repository",
    "SegmentRows": "capture_repository",
    "SessionRow": "capture_repository",
    "status_class": "capture_repository",
    "CopyState": "copy_repository",
    "CrawlRequest": "crawl_request_repository",
    "Crawler": "crawl_request_repository",
    "NeedyPage": "copy_repository",
    "DayStats": "day_repository",
    "FirstPage": "day_repository",
    "Saving": "day_repository",
    "SiteCaptures": "day_repository",
    "POSTGRES_CONNECT_ARGS": "engine",
    "connection_lost": "engine",
    "make_engine": "engine",
    "retry_on_connection_loss": "engine",
    "shared_engine": "engine",
    "Catalog": "entry",
    "CatalogStatus": "entry",
    "CatalogTransaction": "entry",
    "CaptureScope": "export_repository",
    "ExportCapture": "export_repository",
    "FileEntry": "file_repository",
    "PlaceRow": "file_repository",
    "SnapshotEntries": "file_repository",
    "SnapshotFiles": "file_repository",
    "CAS": "fs_versions",
    "FS_VERSIONS": "fs_versions",
    "LEGACY_VERSIONS": "fs_versions",
    "NO_FOLDER": "fs_versions",
    "ORGANIZED": "fs_versions",
    "UnknownFsVersionError": "fs_versions",
    "V0_4": "fs_versions",
    "V0_6": "fs_versions",
    "V0_8": "fs_versions",
    "V0_8_3": "fs_versions",
    "V0_9": "fs_versions",
    "WRITABLE_FS_VERSIONS": "fs_versions",
    "checked_fs_version": "fs_versions",
    "SnapshotWarc": "import_repository",
    "upgrade_catalog": "migrate",
    "ApplyReport": "ref_counts",
    "BlobEntry": "ref_counts",
    "CaptureKey": "replay_repository",
    "KeyRange": "replay_repository",
    "Nearest": "replay_repository",
    "ReplayRepository": "replay_repository",
    "capture_key": "replay_repository",
    "key_after_prefix": "replay_repository",
    "head_revision": "schema_revision",
    "IngestState": "snapshot_repository",
    "ResultDetails": "snapshot_repository",
    "SnapshotDetails": "snapshot_repository",
    "normalized_id": "snapshot_repository",
    "normalize_catalog_url": "urls",
    "redact_url": "urls",
    "sqlite_file": "urls",
}

__all__ = [
    "CAS",
    "COPY_STATUSES",
    "EXCHANGE_KINDS",
    "FS_VERSIONS",
    "LEGACY_VERSIONS",
    "NO_FOLDER",
    "ORGANIZED",
    "POSTGRES_CONNECT_ARGS",
    "RENDERING_KINDS",
    "V0_4",
    "V0_6",
    "V0_8",
    "V0_8_3",
    "V0_9",
    "WRITABLE_FS_VERSIONS",
    "AlreadyCompacted",
    "ApplyReport",
    "BlobCounts",
    "BlobEntry",
    "BlobRow",
    "Body",
    "BrowserPage",
    "Capture",
    "CaptureKey",
    "CaptureRow",
    "CaptureScope",
    "Catalog",
    "CatalogStatus",
    "CatalogTransaction",
    "CopyState",
    "CrawlRequest",
    "Crawler",
    "DayStats",
    "DuplicateKey",
    "EntryRow",
    "ExportCapture",
    "FileEntry",
    "FileRecord",
    "FirstPage",
    "IngestState",
    "KeyRange",
    "MergedRows",
    "Nearest",
    "NeedyPage",
    "PlaceRow",
    "QaCheck",
    "RecordedCheck",
    "RecordedSegment",
    "RecordedSnapshot",
    "ReplayRepository",
    "ResultDetails",
    "ResultRow",
    "Saving",
    "SegmentLedgerRow",
    "SegmentRows",
    "SessionRow",
    "SiteCaptures",
    "SnapshotDetails",
    "SnapshotEntries",
    "SnapshotFiles",
    "SnapshotRow",
    "SnapshotWarc",
    "UnknownFsVersionError",
    "WaitingBlob",
    "capture_key",
    "checked_fs_version",
    "connection_lost",
    "folder_claimant",
    "grace_cutoff",
    "head_revision",
    "key_after_prefix",
    "make_engine",
    "new_id",
    "normalize_catalog_url",
    "normalized_id",
    "redact_url",
    "retry_on_connection_loss",
    "shared_engine",
    "sqlite_file",
    "status_class",
    "upgrade_catalog",
    "utcnow",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
