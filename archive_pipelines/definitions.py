"""The one Definitions object of the code location (assembled here, no logic)."""

import dagster as dg

from archive_pipelines.ops.init import init_job
from archive_pipelines.resources import CatalogResource, SettingsResource

_settings = SettingsResource()

defs = dg.Definitions(
    jobs=[init_job],
    resources={
        "settings": _settings,
        "catalog": CatalogResource(settings=_settings),
    },
)
