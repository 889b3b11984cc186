"""`Storage`: the old all-in-one view of the storage parts (being replaced: domain functions
take the parts from `storage.assembly` they use)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from sqlalchemy import Engine

from archive_pipelines.blobstore import LocalBlobStore
from archive_pipelines.catalog.sessions import Catalog, Transactions
from archive_pipelines.datadir import DataDir
from archive_pipelines.settings import Settings
from archive_pipelines.storage.assembly import StorageParts, open_storage
from archive_pipelines.storage.file_work import FileWork
from archive_pipelines.storage.file_workers import FileWorkers
from archive_pipelines.storage.primary import PrimaryStore
from archive_pipelines.views import SnapshotPlace, ViewFarm, ViewSet

T = TypeVar("T")
R = TypeVar("R")


class Storage(Transactions):
    """The storage parts (`parts`) behind the old single object; open with `Storage.open`."""

    def __init__(self, parts: StorageParts) -> None:
        Transactions.__init__(self, parts.catalog.engine)
        self.parts = parts
        self.settings = parts.settings

    @classmethod
    def open(cls, settings: Settings, *, engine: Engine | None = None,
             views: tuple[str, ...] | None = None) -> Storage:
        return cls(open_storage(settings, engine=engine, views=views))

    @property
    def catalog(self) -> Catalog:
        return self.parts.catalog

    @property
    def primary_store(self) -> PrimaryStore:
        return self.parts.primary

    @property
    def view_set(self) -> ViewSet:
        return self.parts.views

    @property
    def work(self) -> FileWork:
        return self.parts.work

    @property
    def views(self) -> tuple[str, ...]:
        return self.parts.views.enabled

    @property
    def file_view(self) -> str | None:
        return self.parts.views.file_view

    def folder_links(self, place: SnapshotPlace) -> list[tuple[str, str]]:
        return self.parts.views.folder_links(place)

    @property
    def layout(self) -> DataDir:
        return self.parts.layout

    @property
    def primary(self) -> LocalBlobStore:
        return self.parts.primary.store

    @property
    def primary_root(self) -> Path:
        return self.parts.primary.root

    @property
    def primary_store_id(self) -> int:
        return self.parts.primary.store_id

    @property
    def farm(self) -> ViewFarm:
        return self.parts.views.farm

    def map_io(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        return self.parts.work.map_io(fn, items)

    @property
    def ingest_processes(self) -> int:
        return self.parts.work.ingest_processes

    def file_workers(self) -> FileWorkers:
        return self.parts.work.file_workers()

    def started_file_workers(self) -> FileWorkers | None:
        return self.parts.work.started_file_workers()

    def workers_failed(self) -> None:
        self.parts.work.workers_failed()

    def close(self) -> None:
        self.parts.close()

    def __enter__(self) -> Storage:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
