"""Typed settings: `<data>/archive.toml` plus environment variables."""

from archive_pipelines.settings.load import load_settings, render_default_toml
from archive_pipelines.settings.model import (
    ALL_VIEWS,
    CatalogSettings,
    CrawlSettings,
    ExportSettings,
    ImportSettings,
    MigrationSettings,
    QaSettings,
    RedisSettings,
    ReplaySettings,
    ReplicationSettings,
    Settings,
    StorageSettings,
    StoreSettings,
    ViewSettings,
)

__all__ = [
    "ALL_VIEWS",
    "CatalogSettings",
    "CrawlSettings",
    "ExportSettings",
    "ImportSettings",
    "MigrationSettings",
    "QaSettings",
    "RedisSettings",
    "ReplaySettings",
    "ReplicationSettings",
    "Settings",
    "StorageSettings",
    "StoreSettings",
    "ViewSettings",
    "load_settings",
    "render_default_toml",
]
