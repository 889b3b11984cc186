"""What a batch of checks comes to (the `captures` asset's metadata) and one line for a
capture under the threshold (the run log, the `capture_qa` check)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from archive_pipelines.qa.capture_check import CheckedPage


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
