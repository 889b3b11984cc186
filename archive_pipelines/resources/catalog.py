"""The catalog as a Dagster resource: the one resource that holds an engine (one per process
and catalog, `catalog.shared_engine`, shared with the CLI), a repository per call."""

from __future__ import annotations

import dagster as dg
from sqlalchemy import Engine

from archive_pipelines.catalog import CatalogRepository, shared_engine
from archive_pipelines.resources.settings import SettingsResource
from archive_pipelines.settings import Settings


class CatalogResource(dg.ConfigurableResource):
    """The catalog database named by the settings (SQLite by default, or DATABASE_URL)."""

    settings: SettingsResource

    def project_settings(self) -> Settings:
        return self.settings.load()

    def engine(self, settings: Settings | None = None) -> Engine:
        """The catalog's engine (`settings`: already loaded ones, to spare a second load)."""
        settings = settings or self.project_settings()
        return shared_engine(settings.catalog_url,
                             busy_timeout_ms=settings.catalog.sqlite_busy_timeout_ms)

    def repository(self) -> CatalogRepository:
        return CatalogRepository(self.engine())
