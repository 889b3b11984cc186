"""What a crawl request says to a person: its figures (pages, new bodies, unchanged, errors,
why it stopped), whether anything will take it, and when the `crawls` sensor records it
again. Plain Python: the Dagster wiring and the command line show these.

The figures are read from the request's outcome (its end) or else its progress (while it
runs), under the keys the crawler writes: `pages`, `new_bodies`, `unchanged`, `errors`, and
`stopped_because` (or `stopped`, as `frontier-service run` reports it).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from archive_pipelines.catalog import CrawlRequest
from archive_pipelines.crawls.requests import CrawlerPresence

NOT_TAKEN = "queued; no crawler has taken it yet"


@dataclass(frozen=True)
class CrawlFigures:
    """A crawl's counts so far (running) or in all (ended)."""

    pages: int
    new_bodies: int
    unchanged: int
    errors: int
    stopped_because: str

    def as_dict(self) -> dict[str, int | str]:
        return {"pages": self.pages, "new_bodies": self.new_bodies,
                "unchanged": self.unchanged, "errors": self.errors,
                "stopped_because": self.stopped_because}


def crawl_figures(request: CrawlRequest) -> CrawlFigures:
    """The figures of the outcome, else of the progress (0 / "" for what neither has)."""
    source: Mapping[str, Any] = {**request.progress, **(request.outcome or {})}
    stopped = source.get("stopped_because") or source.get("stopped") or ""
    return CrawlFigures(pages=_count(source, "pages"), new_bodies=_count(source, "new_bodies"),
                        unchanged=_count(source, "unchanged"), errors=_count(source, "errors"),
                        stopped_because=str(stopped))


def _count(source: Mapping[str, Any], key: str) -> int:
    value = source.get(key, 0)
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def where_it_stands(request: CrawlRequest, presence: CrawlerPresence) -> str:
    """One line: the crawl's state, and for a queued one whether a crawler will take it."""
    if request.state == "queued":
        return f"{NOT_TAKEN}; {presence.describe()}"
    if request.state == "running":
        return (f"running on {request.claimed_by} (attempt {request.attempts}), "
                f"{crawl_figures(request).pages:,} pages so far")
    figures = crawl_figures(request)
    why = f": {figures.stopped_because}" if figures.stopped_because else ""
    return f"{request.state}{why}"


def times(request: CrawlRequest) -> dict[str, str]:
    """queued/started/finished/heartbeat times (ISO 8601, UTC), those it has."""
    stamps: dict[str, datetime | None] = {
        "queued_at": request.queued_at, "started_at": request.started_at,
        "finished_at": request.finished_at, "heartbeat_at": request.heartbeat_at}
    return {key: stamp.isoformat(timespec="seconds") for key, stamp in stamps.items()
            if stamp is not None}


def signature(request: CrawlRequest) -> str:
    """Changes whenever what the `crawls` asset shows of the request changes."""
    shown = [request.state, request.attempts, request.claimed_by, request.finished_at and
             request.finished_at.isoformat(), request.progress, request.outcome]
    text = json.dumps(shown, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Changes:
    """One tick of the `crawls` sensor: the requests to record, and what it has seen."""

    changed: list[CrawlRequest]
    seen: dict[str, str]  # crawl_id -> signature, of the requests listed this tick


def changed_requests(requests: Iterable[CrawlRequest], seen: Mapping[str, str]) -> Changes:
    """The requests whose signature differs from the one seen last (new ones too), oldest
    first; `seen` keeps only the listed requests, so the cursor stays as long as the list."""
    now_seen: dict[str, str] = {}
    changed: list[CrawlRequest] = []
    for request in sorted(requests, key=lambda r: (r.queued_at, r.id)):
        mark = signature(request)
        now_seen[request.crawl_id] = mark
        if seen.get(request.crawl_id) != mark:
            changed.append(request)
    return Changes(changed, now_seen)
