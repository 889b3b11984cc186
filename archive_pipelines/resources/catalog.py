"""The catalog as a Dagster resource: the one resource that opens the catalog (on the
process's one engine per catalog, shared with the CLI)."""

from __future__ import annotations

import dagster as dg

from archive_pipelines.catalog import Catalog
from archive_pipelines.resources.settings import SettingsResource
from archive_pipelines.settings import Settings


class CatalogResource(dg.ConfigurableResource):
    """The catalog database named by the settings (SQLite by default, or DATABASE_URL)."""

    settings: SettingsResource

    def project_settings(self) -> Settings:
        return self.settings.load()

    def open(self, settings: Settings | None = None) -> Catalog:
        """The catalog (`settings`: already loaded ones, to spare a second load)."""
        settings = settings or self.project_settings()
        return Catalog.open(settings.catalog_url, shared=True,
                            busy_timeout_ms=settings.catalog.sqlite_busy_timeout_ms)
