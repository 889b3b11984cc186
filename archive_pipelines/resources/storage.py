"""Storage (catalog + primary blob store + views) as a Dagster resource."""

from functools import cache

import dagster as dg

from archive_pipelines.catalog import make_engine
from archive_pipelines.resources.settings import SettingsResource
from archive_pipelines.settings import ALL_VIEWS
from archive_pipelines.storage import Storage


@cache
def _engine(url: str, busy_timeout_ms: int):  # type: ignore[no-untyped-def]
    return make_engine(url, busy_timeout_ms=busy_timeout_ms)


class StorageResource(dg.ConfigurableResource):
    """The primary blob store, the catalog and the view farm named by the settings."""

    settings: SettingsResource

    def open(self, views: list[str] | None = None) -> Storage:
        settings = self.settings.load()
        unknown = sorted(set(views or ()) - set(ALL_VIEWS))
        if unknown:
            raise dg.Failure(f"unknown view(s) {', '.join(unknown)}; choose from "
                             f"{', '.join(ALL_VIEWS)}")
        engine = _engine(settings.catalog_url, settings.catalog.sqlite_busy_timeout_ms)
        return Storage.open(settings, engine=engine,
                            views=tuple(views) if views else None)
