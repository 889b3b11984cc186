"""The catalog as a Dagster resource: an engine per process, a repository per call."""

from __future__ import annotations

from functools import cache

import dagster as dg
from sqlalchemy import Engine

from archive_pipelines.catalog import CatalogRepository, make_engine
from archive_pipelines.resources.settings import SettingsResource
from archive_pipelines.settings import Settings


@cache
def _engine_for(url: str, busy_timeout_ms: int) -> Engine:
    return make_engine(url, busy_timeout_ms=busy_timeout_ms)


class CatalogResource(dg.ConfigurableResource):
    """The catalog database named by the settings (SQLite by default, or DATABASE_URL)."""

    settings: SettingsResource

    def engine(self) -> Engine:
        settings = self.settings.load()
        return _engine_for(settings.catalog_url, settings.catalog.sqlite_busy_timeout_ms)

    def repository(self) -> CatalogRepository:
        return CatalogRepository(self.engine())

    def project_settings(self) -> Settings:
        return self.settings.load()
