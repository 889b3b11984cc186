"""State shared by CLI commands: the data dir, settings, catalog and storage, opened lazily
and closed when the command ends (`close()`, which the command group registers)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

# Imported where used: `--help` needs none of them, and each command only some (lazy_group).
if TYPE_CHECKING:
    from sqlalchemy import Engine

    from archive_pipelines.catalog import CatalogRepository
    from archive_pipelines.settings import Settings
    from archive_pipelines.storage.assembly import StorageParts


@dataclass
class CliContext:
    data_dir: str | None
    _engine: Engine | None = field(default=None, repr=False)
    _parts: list[StorageParts] = field(default_factory=list, repr=False)

    @cached_property
    def unchecked_settings(self) -> Settings:
        """The settings, whether or not the data dir exists (for `init`, which makes it)."""
        from archive_pipelines.settings import load_settings

        return load_settings(self.data_dir)

    @cached_property
    def settings(self) -> Settings:
        """The settings of a data dir `init` made; a DataDirError naming `init` otherwise,
        before anything is read or written there."""
        from archive_pipelines.datadir import require_initialized

        return require_initialized(self.unchecked_settings)

    @property
    def engine(self) -> Engine:
        """The process's engine for the catalog (`catalog.shared_engine`, as the Dagster
        resources use), its connections closed by `close()`."""
        if self._engine is None:
            from archive_pipelines.catalog import shared_engine

            self._engine = shared_engine(
                self.settings.catalog_url,
                busy_timeout_ms=self.settings.catalog.sqlite_busy_timeout_ms,
            )
        return self._engine

    @property
    def catalog(self) -> CatalogRepository:
        from archive_pipelines.catalog import CatalogRepository

        return CatalogRepository(self.engine)

    def parts(self, views: tuple[str, ...] | None = None) -> StorageParts:
        """The storage parts on the catalog engine (`views`: a subset of the enabled ones),
        closed by `close()`: their worker processes are stopped and waited for before the
        process exits, never left to the interpreter's exit hooks."""
        from archive_pipelines.storage.assembly import open_storage

        parts = open_storage(self.settings, engine=self.engine, views=views or None)
        self._parts.append(parts)
        return parts

    def close(self) -> None:
        """Stop the worker processes of every storage parts opened, then close the engine's
        connections."""
        while self._parts:
            self._parts.pop().close()
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None
