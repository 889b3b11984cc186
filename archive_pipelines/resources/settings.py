"""The project settings as a Dagster resource."""

from __future__ import annotations

import dagster as dg
from pydantic import Field

from archive_pipelines.settings import Settings, load_settings


class SettingsResource(dg.ConfigurableResource):
    """Loads `<data>/archive.toml` + environment. Empty data_dir = $ARCHIVE_DATA_DIR or ./data."""

    data_dir: str = Field(
        default="",
        description="Data directory; empty means $ARCHIVE_DATA_DIR, else ./data.",
    )

    def load(self) -> Settings:
        return load_settings(self.data_dir or None)
