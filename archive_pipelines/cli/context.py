"""State shared by CLI commands: the data dir, settings and catalog, opened lazily."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from sqlalchemy import Engine

from archive_pipelines.catalog import CatalogRepository, make_engine
from archive_pipelines.settings import Settings, load_settings


@dataclass
class CliContext:
    data_dir: str | None
    _engine: Engine | None = field(default=None, repr=False)

    @cached_property
    def settings(self) -> Settings:
        return load_settings(self.data_dir)

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
