"""Human-browsable symlink views generated from the catalog (never the other way round)."""

from archive_pipelines.views.farm import LinkState, ViewFarm
from archive_pipelines.views.paths import (
    SnapshotPlace,
    UnsafePathError,
    compat_link_target,
    domain_of,
    file_view,
    folder_links,
    validate_extractor,
    validate_relative_path,
    view_dir,
    view_path,
)
from archive_pipelines.views.viewset import ViewSet

__all__ = [
    "LinkState",
    "SnapshotPlace",
    "UnsafePathError",
    "ViewFarm",
    "ViewSet",
    "compat_link_target",
    "domain_of",
    "file_view",
    "folder_links",
    "validate_extractor",
    "validate_relative_path",
    "view_dir",
    "view_path",
]
