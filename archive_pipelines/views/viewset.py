"""`ViewSet`: the view farm and which views a piece of work keeps."""

from __future__ import annotations

from functools import cached_property
from pathlib import Path

from archive_pipelines.views.farm import ViewFarm
from archive_pipelines.views.paths import SnapshotPlace, file_view, folder_links


class ViewSet:
    """The symlink farm under `archive_root` into the store at `store_root`, and the views
    (`enabled`) that work on it makes or checks.

    `file_view` (the view with a link per file) is fixed by the settings' enabled views,
    `all_enabled`, whichever subset `enabled` is.
    """

    def __init__(self, archive_root: Path, store_root: Path | None, enabled: tuple[str, ...],
                 *, all_enabled: tuple[str, ...] | None = None,
                 crawl: tuple[str, ...] = ()) -> None:
        self.archive_root, self.store_root = archive_root, store_root
        self.enabled = enabled
        # The views crawled pages appear in (`[crawl] views`, among the enabled ones).
        self.crawl = tuple(view for view in crawl if view in enabled)
        self.file_view = file_view(all_enabled or ()) or file_view(enabled)

    @cached_property
    def farm(self) -> ViewFarm:
        return ViewFarm(self.archive_root, self.store_root)

    def folder_links(self, place: SnapshotPlace) -> list[tuple[str, str]]:
        """The snapshot's folder links in the enabled views (see `views.folder_links`)."""
        return [] if self.file_view is None else folder_links(self.file_view, self.enabled, place)
