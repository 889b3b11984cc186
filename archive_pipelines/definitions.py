"""The one Definitions object of the code location (assembled here, no logic)."""

import dagster as dg

from archive_pipelines.assets.crawl import crawl_segments
from archive_pipelines.assets.storage import blobs, storage_health, views
from archive_pipelines.ops.init import init_job
from archive_pipelines.ops.storage_jobs import (
    gc_job,
    migrate_to_cas_job,
    rebuild_views_job,
    verify_storage_job,
)
from archive_pipelines.resources import CatalogResource, SettingsResource, StorageResource
from archive_pipelines.sensors.schedules import verify_storage_schedule

_settings = SettingsResource()

defs = dg.Definitions(
    assets=[blobs, views, crawl_segments],
    asset_checks=[storage_health],
    jobs=[init_job, verify_storage_job, rebuild_views_job, migrate_to_cas_job, gc_job],
    schedules=[verify_storage_schedule],
    resources={
        "settings": _settings,
        "catalog": CatalogResource(settings=_settings),
        "storage": StorageResource(settings=_settings),
    },
)
