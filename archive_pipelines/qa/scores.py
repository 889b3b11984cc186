"""A capture's overall QA score from its parts.

The overall score is the lower of the pixel score and the share of resources replayed: a
replay is as good as its weakest side (a page that looks right but misses half its images is
not a good capture, nor one whose every resource loads but whose layout broke). It is 0 when
the replay gave no screenshot (nothing to compare) or when any request left the replay server
(the replay is not self-contained: the archive cannot vouch for what the page showed).
"""

from __future__ import annotations

from archive_pipelines.catalog import QaCheck
from archive_pipelines.qa.resources import ResourceScore


def overall_score(pixel: float | None, resources: ResourceScore) -> float:
    """min(pixel score, resources replayed / expected); 0 with no screenshot or any leak."""
    if pixel is None or resources.leak_count:
        return 0.0
    return min(pixel, resources.fraction)


def qa_check(pixel: float | None, resources: ResourceScore, *, error: str | None = None) -> QaCheck:
    """The figures a check records."""
    return QaCheck(pixel_score=pixel, resources_expected=resources.expected,
                   resources_replayed=resources.replayed, missing=resources.missing,
                   leaks=resources.leak_count, score=overall_score(pixel, resources), error=error)
