"""Typed ConfigurableResources exposing the domain to Dagster."""

from archive_pipelines.resources.catalog import CatalogResource
from archive_pipelines.resources.settings import SettingsResource
from archive_pipelines.resources.storage import StorageResource

__all__ = ["CatalogResource", "SettingsResource", "StorageResource"]
