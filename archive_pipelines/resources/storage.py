"""Storage (catalog + primary blob store + views) as a Dagster resource."""

import dagster as dg

from archive_pipelines.resources.catalog import CatalogResource
from archive_pipelines.settings import ALL_VIEWS
from archive_pipelines.storage import Storage


class StorageResource(dg.ConfigurableResource):
    """The primary blob store, the catalog and the view farm named by the settings."""

    catalog: CatalogResource

    def open(self, views: list[str] | None = None) -> Storage:
        settings = self.catalog.project_settings()
        unknown = sorted(set(views or ()) - set(ALL_VIEWS))
        if unknown:
            raise dg.Failure(f"unknown view(s) {', '.join(unknown)}; choose from "
                             f"{', '.join(ALL_VIEWS)}")
        return Storage.open(settings, engine=self.catalog.engine(settings),
                            views=tuple(views) if views else None)
