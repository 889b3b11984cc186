"""One queued crawl as the crawler runs it: its settings from the request's definition, and
the progress and outcome written back into the request row.

A request's crawl is named by its `crawl_id` (its Redis keys, its seen filter and counters)
and keeps its frontier under `data_dir/crawls/{crawl_id}`; its pages go into the data dir's
shared sessions and blob store like any crawl's.

Progress keys (heartbeats and the outcome): `pages` (fetches finished, every attempt of the
crawl: the crawl's Redis counters), `pages_ok`, `errors`, `new_bodies`, `body_bytes` (bodies
this crawl stored first) and `unchanged` (pages answered 304), each the attempts' sum,
`urls_queued`, `attempt` and `pid` (of the crawl's process). The outcome
adds `stopped_because` (the run's stop summary), `failure` (empty unless it could not go on)
and `run` (the last attempt's summary as `frontier-service run` prints it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from archive_pipelines.archive_error import ArchiveError, SettingsError
from archive_pipelines.catalog import CrawlRequest
from archive_pipelines.crawls.definitions import CrawlDefinition, seed_hosts
from frontier_service.metrics import CrawlMetrics
from frontier_service.service.crawler_settings import CrawlerSettings
from frontier_service.service.service import RunReport

CRAWLS_FOLDER = "crawls"  # data_dir/crawls/{crawl_id}: each request's frontier root
_CRAWL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,120}", re.ASCII)
# Summed over a crawl's attempts (an attempt's process counts from zero).
_ADDED_UP = ("new_bodies", "body_bytes", "unchanged")


class BadCrawlRequest(ArchiveError):
    """A request whose definition the crawler cannot run."""


def frontier_root_of(crawl_id: str) -> Path:
    """The request's frontier root, relative to the data dir."""
    if _CRAWL_ID.fullmatch(crawl_id) is None:
        raise BadCrawlRequest(f"crawl id {crawl_id!r} cannot name a folder")
    return Path(CRAWLS_FOLDER) / crawl_id


def request_settings(base: CrawlerSettings, request: CrawlRequest,
                     ) -> tuple[CrawlerSettings, tuple[str, ...]]:
    """(settings, seeds) of the request's crawl: `base` ([crawl] and the command line) with
    the definition's scope, limits and politeness; BadCrawlRequest saying what is wrong."""
    root = frontier_root_of(request.crawl_id)
    try:
        definition = CrawlDefinition.from_dict(request.definition)
        changes: dict[str, Any] = {
            "crawl_name": request.crawl_id,
            "frontier_root": root,
            "allowed_domains": definition.allowed_domains or seed_hosts(definition.seeds),
            "allowed_networks": definition.allowed_networks,
            "host_map": definition.host_map,
            "max_depth": definition.max_depth,
            "domain_page_budget": definition.page_budget,
            "max_pages": definition.max_pages,
            "per_host_concurrency": definition.per_host_concurrency,  # None: [crawl]'s
            "min_delay_s": definition.min_delay_seconds,
            # Conditional requests with the validators of the definition's earlier crawls.
            "validators_key": definition.name if definition.conditional else "",
            "browser": definition.browser,
            "browser_by_domain": definition.browser_by_domain,
        }
        settings = base.with_changes(**changes)
    except (TypeError, ValueError, SettingsError) as exc:
        raise BadCrawlRequest(f"crawl {request.crawl_id}: its definition cannot be run: "
                              f"{exc}") from None
    return settings, definition.seeds


def progress_of(*, counters: Mapping[str, int], metrics: CrawlMetrics | None,
                before: Mapping[str, Any], attempt: int, pid: int | None) -> dict[str, Any]:
    """The crawl's progress so far: the crawl's Redis `counters` (every attempt's), the
    running attempt's `metrics`, and what earlier attempts reported (`before`)."""
    m = metrics or CrawlMetrics()
    ok, errors = counters.get("pages_fetched", 0), counters.get("fetch_errors", 0)
    # `unchanged` (304s archived as the earlier body) is helper D's metric: 0 until it lands.
    attempt_counts = {"new_bodies": m.new_blobs, "body_bytes": m.body_bytes,
                      "unchanged": int(getattr(m, "unchanged", 0))}
    progress: dict[str, Any] = {"pages": ok + errors, "pages_ok": ok, "errors": errors,
                                "urls_queued": counters.get("urls_added", m.urls_added)}
    for key in _ADDED_UP:
        progress[key] = int(before.get(key, 0)) + attempt_counts[key]
    progress.update(attempt=attempt, pid=pid)
    return progress


def earlier_attempts(request: CrawlRequest) -> dict[str, int]:
    """What the attempts before this one stored (from the row's last progress)."""
    if request.attempts <= 1:
        return {}
    return {key: int(request.progress.get(key, 0)) for key in _ADDED_UP}


def outcome_of(progress: Mapping[str, Any], report: RunReport) -> dict[str, Any]:
    return {**progress, "stopped_because": report.stop_reason, "failure": report.failure,
            "run": report.as_metadata()}
