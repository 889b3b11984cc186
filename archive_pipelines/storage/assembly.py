"""The one place that builds the storage parts from settings: the catalog, the primary
store, the views and the file work. The CLI, the Dagster resources and the tests build
them here, then hand each domain function the parts it uses."""

from __future__ import annotations

from dataclasses import dataclass

from archive_pipelines.blobstore import open_store
from archive_pipelines.catalog import Catalog
from archive_pipelines.datadir import DataDir
from archive_pipelines.settings import Settings
from archive_pipelines.storage.file_work import FileWork
from archive_pipelines.storage.primary import PrimaryStore
from archive_pipelines.views import ViewSet


@dataclass
class StorageParts:
    """The parts built from one settings; `close()` stops the file work's processes (the
    catalog is whoever passed it)."""

    settings: Settings
    catalog: Catalog
    primary: PrimaryStore
    views: ViewSet
    work: FileWork
    layout: DataDir

    def close(self) -> None:
        self.work.close()

    def __enter__(self) -> StorageParts:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def open_catalog(settings: Settings, *, shared: bool = False) -> Catalog:
    """The catalog of the settings: on the process's shared engine (`shared`: the Dagster
    resources and the CLI), or on an engine of its own (scripts, tests)."""
    return Catalog.open(settings.catalog_url, shared=shared,
                        busy_timeout_ms=settings.catalog.sqlite_busy_timeout_ms)


def open_primary(settings: Settings, catalog: Catalog) -> PrimaryStore:
    """The primary store of the settings, opened and registered in the catalog on first use."""
    config = settings.primary_store
    root = settings.local_path(config.path) if config.kind == "local" else None
    location = settings.store_location(config)

    def find_store_id() -> int:
        with catalog.transaction() as tx:
            return tx.copies.ensure_store(name=config.name, kind=config.kind,
                                          location=location, codec=config.codec)

    return PrimaryStore(root, lambda: open_store(config, settings.data_dir), find_store_id)


def open_views(settings: Settings, primary: PrimaryStore,
               views: tuple[str, ...] | None = None) -> ViewSet:
    """The view farm of the data dir; `views`: a subset of the enabled views to work on."""
    enabled = tuple(settings.views.enabled)
    return ViewSet(DataDir(settings.data_dir).archive, primary.root,
                   enabled if views is None else views, all_enabled=enabled,
                   crawl=tuple(settings.crawl.views))


def open_storage(settings: Settings, *, catalog: Catalog | None = None,
                 views: tuple[str, ...] | None = None) -> StorageParts:
    """Every part, built from `settings` (`catalog`: the one the caller holds; without one,
    `open_catalog`)."""
    catalog = catalog or open_catalog(settings)
    primary = open_primary(settings, catalog)
    view_set = open_views(settings, primary, views)
    work = FileWork(primary, view_set, settings.storage.ingest_processes)
    return StorageParts(settings=settings, catalog=catalog, primary=primary, views=view_set,
                        work=work, layout=DataDir(settings.data_dir))
