"""State shared by CLI commands: the data dir, settings and catalog, opened lazily."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from sqlalchemy import Engine

from archive_pipelines.catalog import CatalogRepository, make_engine
from archive_pipelines.datadir import require_initialized
from archive_pipelines.settings import Settings, load_settings


@dataclass
class CliContext:
    data_dir: str | None
    _engine: Engine | None = field(default=None, repr=False)

    @cached_property
    def unchecked_settings(self) -> Settings:
        """The settings, whether or not the data dir exists (for `init`, which makes it)."""
        return load_settings(self.data_dir)

    @cached_property
    def settings(self) -> Settings:
        """The settings of a data dir `init` made; a DataDirError naming `init` otherwise,
        before anything is read or written there."""
        return require_initialized(self.unchecked_settings)

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            self._engine = make_engine(
                self.settings.catalog_url,
                busy_timeout_ms=self.settings.catalog.sqlite_busy_timeout_ms,
            )
        return self._engine

    @property
    def catalog(self) -> CatalogRepository:
        return CatalogRepository(self.engine)
