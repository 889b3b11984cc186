"""State shared by CLI commands: the data dir, settings, catalog and storage, opened lazily
and closed when the command ends (`close()`, which the command group registers)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

# Imported where used: `--help` needs none of them, and each command only some (lazy_group).
if TYPE_CHECKING:
    from archive_pipelines.catalog import Catalog
    from archive_pipelines.settings import Settings
    from archive_pipelines.storage.assembly import StorageParts


@dataclass
class CliContext:
    data_dir: str | None
    _catalog: Catalog | None = field(default=None, repr=False)
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
    def catalog(self) -> Catalog:
        """The catalog on the process's shared engine (as the Dagster resources use), its
        connections closed by `close()`."""
        if self._catalog is None:
            from archive_pipelines.catalog import Catalog

            self._catalog = Catalog.open(
                self.settings.catalog_url, shared=True,
                busy_timeout_ms=self.settings.catalog.sqlite_busy_timeout_ms,
            )
        return self._catalog

    def parts(self, views: tuple[str, ...] | None = None) -> StorageParts:
        """The storage parts on the catalog (`views`: a subset of the enabled ones),
        closed by `close()`: their worker processes are stopped and waited for before the
        process exits, never left to the interpreter's exit hooks."""
        from archive_pipelines.storage.assembly import open_storage

        parts = open_storage(self.settings, catalog=self.catalog, views=views or None)
        self._parts.append(parts)
        return parts

    def close(self) -> None:
        """Stop the worker processes of every storage parts opened, then close the catalog's
        connections."""
        while self._parts:
            self._parts.pop().close()
        if self._catalog is not None:
            self._catalog.close()
            self._catalog = None
