"""Storage (catalog + primary blob store + views) as a Dagster resource."""

import dagster as dg
from pydantic import PrivateAttr

from archive_pipelines.resources.catalog import CatalogResource
from archive_pipelines.settings import ALL_VIEWS
from archive_pipelines.storage.assembly import StorageParts, open_storage


class StorageResource(dg.ConfigurableResource):
    """The primary blob store, the catalog and the view farm named by the settings.

    Every StorageParts opened during a step is closed when the step ends (its worker processes
    stopped and waited for): a pool left to garbage collection races the interpreter's exit.
    """

    catalog: CatalogResource
    _opened: list[StorageParts] = PrivateAttr(default_factory=list)

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        while self._opened:
            self._opened.pop().close()

    def open(self, views: list[str] | None = None) -> StorageParts:
        """The catalog, primary store, views and file work of the settings (`views`: a
        subset of the enabled ones), each handed to the domain function that uses it."""
        settings = self.catalog.project_settings()
        unknown = sorted(set(views or ()) - set(ALL_VIEWS))
        if unknown:
            raise dg.Failure(f"unknown view(s) {', '.join(unknown)}; choose from "
                             f"{', '.join(ALL_VIEWS)}")
        parts = open_storage(settings, catalog=self.catalog.open(settings),
                             views=tuple(views) if views else None)
        self._opened.append(parts)
        return parts
