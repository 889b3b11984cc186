"""`frontier-service stats`: the frontier's queue sizes and counters, and what was archived."""

from __future__ import annotations

import time
from typing import Any

from frontier_service.archiving.page_index import list_segments
from frontier_service.frontier.leftovers import leftovers
from frontier_service.recovery.epoch import EpochState, check_epoch, read_crawl_id
from frontier_service.scope.drops import COUNTER_PREFIX, dropped_counters
from frontier_service.service.crawler_parts import open_frontier
from frontier_service.service.crawler_settings import CrawlerSettings
from frontier_service.service.stop_report import group_leftovers


async def crawl_stats(settings: CrawlerSettings) -> dict[str, Any]:
    """A snapshot of the crawl named in settings (JSON-ready); reads only: a missing data
    dir is a DataDirError, never made."""
    async with open_frontier(settings, create=False) as (frontier, url):
        stats = await frontier.stats(now=time.time())
        visited = await frontier.visited.count()
        seen_backend = frontier.seen.backend
        crawl_id = read_crawl_id(settings.frontier_home, settings.crawl_name)
        held = (await check_epoch(frontier.redis, frontier.state.keys, crawl_id)
                if crawl_id else None)
        stopped = [left for left in await leftovers(frontier) if left.excluded_reason]
    sessions = settings.data_dir / "sessions"
    segments = list_segments(sessions) if sessions.is_dir() else []
    return {
        "crawl": settings.crawl_name,
        "redis": url,
        "redis_state": _REDIS_STATES[held],
        "pending_bytes": stats.pending_bytes,
        "ready_domains": stats.ready_domains,
        "due_domains": stats.due_domains,
        "leased_domains": stats.leased_domains,
        "visited_urls": visited,
        "seen_filter": seen_backend,
        "segments": len(segments),
        # Hosts taken out of the crawl (page budget, unreachable, refused) with URLs queued.
        "urls_left_on_stopped_hosts": sum(left.urls_left for left in stopped),
        "hosts_stopped": {group.reason: group.as_metadata()
                          for group in group_leftovers(stopped, active="")},
        "urls_dropped": dropped_counters(stats.counters),
        "counters": {name: value for name, value in sorted(stats.counters.items())
                     if not name.startswith(COUNTER_PREFIX)},
    }


_REDIS_STATES = {
    None: "no crawl id on disk yet (no crawl ran here since epochs)",
    EpochState.MATCH: "Redis holds this crawl",
    EpochState.EMPTY: "Redis lost this crawl's state; the next run rebuilds it from disk",
    EpochState.MISSING: "Redis holds only part of this crawl; the next run repairs it",
    EpochState.FOREIGN: "Redis holds another crawl with this name; run refuses it",
}


def format_stats(snapshot: dict[str, Any]) -> str:
    lines = [f"crawl {snapshot['crawl']!r} on {snapshot['redis']}: {snapshot['redis_state']}",
             f"  frontier: {snapshot['pending_bytes']:,} bytes pending, "
             f"{snapshot['ready_domains']:,} ready domains ({snapshot['due_domains']:,} due), "
             f"{snapshot['leased_domains']:,} leased",
             f"  visited URLs: {snapshot['visited_urls']:,}; seen filter: {snapshot['seen_filter']}",
             f"  page-index segments on disk: {snapshot['segments']:,}"]
    if snapshot["hosts_stopped"]:
        lines.append(f"  hosts stopped with URLs left queued "
                     f"({snapshot['urls_left_on_stopped_hosts']:,} URLs in all):")
        lines += [f"    {reason}: {group['hosts']:,} host{'' if group['hosts'] == 1 else 's'}, "
                  f"{group['urls_left']:,} URLs left "
                  f"(e.g. {', '.join(group['examples'])})"
                  for reason, group in snapshot["hosts_stopped"].items()]
    if snapshot["urls_dropped"]:
        lines.append("  URLs not fetched, by reason (each time a link was found): " + ", ".join(
            f"{reason} {count:,}" for reason, count in snapshot["urls_dropped"].items()))
    lines += [f"  {name}: {value:,}" for name, value in snapshot["counters"].items()]
    return "\n".join(lines)
