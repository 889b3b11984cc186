"""Pure decisions for the captures sensor (no Dagster here): which days get a `captures` run.

Each tick lists the segment files under sessions/ (the data dir's, or an S3 primary's
bucket's) and reads the ledger once (`pending_segments`): the listing is the truth, so
segments of a crawl run without Dagster, or whose event was lost, are found like the others.
One run per day; its run key is the hash of the day's pending segment paths, so a day is
not requested again while nothing changes (an ingested day has none; a segment that keeps
failing keeps its key), and a new segment, or a run killed halfway, gives a new key. A day
whose captures run is still in flight is left alone until it ends.
"""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from archive_pipelines.captures.segment_files import SegmentPath
from archive_pipelines.captures.segment_ingest import pending_segments
from archive_pipelines.captures.segment_source import SegmentSource
from archive_pipelines.catalog import Catalog
from archive_pipelines.run_keys import batch_run_key


@dataclass(frozen=True)
class DayRun:
    """A `captures` run to request: the day, its run key, its pending segments, and whether a
    crawl_segments event reported the day since the last tick."""

    day: str
    run_key: str
    segments: int
    reported: bool


@dataclass(frozen=True)
class CaptureRuns:
    """One tick's decision: the runs to request, and the segments still pending."""

    runs: list[DayRun]
    pending: list[SegmentPath]

    def skip_reason(self, events: int) -> str | None:
        """None when there are runs to request; else why not (`events`: crawl_segments
        events read this tick)."""
        return None if self.runs else skip_reason(self.pending, events)


def next_capture_runs(catalog: Catalog, data_dir: Path, *, busy_days: set[str],
                      reported_days: set[str], source: SegmentSource | None = None
                      ) -> CaptureRuns:
    """The segments under `data_dir`/sessions (or in `source`: an S3 primary's bucket) the
    ledger does not hold, as one run per day with no run in flight (`busy_days`)."""
    pending, _skipped = pending_segments(catalog, data_dir, source=source)
    return CaptureRuns(plan_capture_runs(pending, busy_days=busy_days,
                                         reported_days=reported_days), pending)


def plan_capture_runs(pending: list[SegmentPath], *, busy_days: set[str],
                      reported_days: set[str]) -> list[DayRun]:
    """One run per day with pending segments and no run in flight, keyed by the segment set."""
    by_day: dict[str, list[str]] = defaultdict(list)
    for segment in pending:
        by_day[segment.day].append(segment.relative)
    return [DayRun(day, batch_run_key(f"captures-{day}", sorted(paths)), len(paths),
                   day in reported_days)
            for day, paths in sorted(by_day.items()) if day not in busy_days]


def skip_reason(pending: list[SegmentPath], events: int) -> str:
    """Why a tick requests no run, in an operator's words."""
    if not pending:
        return (f"nothing to ingest: every crawl segment under sessions/ is in the catalog "
                f"({events} crawl_segments event(s) since the last tick)")
    days = sorted({segment.day for segment in pending})
    return (f"{len(pending)} segment(s) wait for the captures run of their day to end "
            f"({', '.join(days[:5])}{' ...' if len(days) > 5 else ''})")


def outside_data_dir(paths: list[str], data_dir: Path) -> list[str]:
    """The reported segment files that are not under `data_dir/sessions`."""
    sessions = os.path.realpath(data_dir / "sessions")
    return [path for path in paths if not os.path.realpath(path).startswith(sessions + os.sep)]
