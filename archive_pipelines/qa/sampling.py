"""Which browser captures to check, and how settings make a check."""

from __future__ import annotations

import random
from collections.abc import Sequence

from archive_pipelines.blobstore import BlobStore
from archive_pipelines.catalog import Catalog
from archive_pipelines.qa.capture_check import CheckedPage, InProcessReplay, check_pages
from archive_pipelines.qa.replay_view import ReplayLoad
from archive_pipelines.settings import Settings


def sample_unchecked(catalog: Catalog, day: str, *, count: int, seed: int | None = None) -> list[int]:
    """Up to `count` browser captures of the day's segments never checked, drawn at random
    (oldest first in the result)."""
    if count <= 0:
        return []
    unchecked = catalog.qa.unchecked_browser_pages(day)
    if len(unchecked) <= count:
        return unchecked
    return sorted(random.Random(seed).sample(unchecked, count))


def check_with_settings(page_ids: Sequence[int], *, catalog: Catalog, store: BlobStore,
                        settings: Settings, replay_url: str | None = None) -> list[CheckedPage]:
    """`check_pages` as `settings` say: their replay server (`qa.replay_url`, or one started
    for the check from the `replay` settings), browser and time cap."""
    url = replay_url or settings.qa.replay_url or None
    return check_pages(
        page_ids, catalog=catalog, store=store, replay_url=url,
        in_process=None if url else InProcessReplay(settings.replay, settings.data_dir),
        chromium=settings.qa.chromium or None,
        load=ReplayLoad(timeout_s=settings.qa.page_timeout_seconds))
