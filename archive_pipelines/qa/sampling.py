"""Which browser captures to check, how settings make a check, and what a batch of checks
comes to (for the `captures` asset's metadata and the `capture_qa` check)."""

from __future__ import annotations

import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

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


@dataclass(frozen=True)
class QaSummary:
    """A batch of checks: how many, their median score, and those under the threshold."""

    checked: int
    median: float | None
    threshold: float
    below: tuple[CheckedPage, ...]

    def as_metadata(self) -> dict[str, int | float]:
        figures: dict[str, int | float] = {"qa_checked": self.checked,
                                           "qa_below_threshold": len(self.below),
                                           "qa_threshold": self.threshold}
        if self.median is not None:
            figures["qa_median_score"] = round(self.median, 4)
        return figures


def summarize(checked: Sequence[CheckedPage], *, threshold: float) -> QaSummary:
    scores = [c.check.score for c in checked]
    return QaSummary(checked=len(checked), median=statistics.median(scores) if scores else None,
                     threshold=threshold,
                     below=tuple(c for c in checked if c.check.score < threshold))


def describe(page_url: str, check_score: float, *, missing: Sequence[str], leaks: int,
             error: str | None) -> str:
    """One line for a capture under the threshold."""
    parts = [f"{page_url}: score {check_score:.3f}"]
    if missing:
        parts.append(f"{len(missing)} missing (e.g. {missing[0]})")
    if leaks:
        parts.append(f"{leaks} request(s) left the replay server")
    if error:
        parts.append(error)
    return ", ".join(parts)
