"""The process's counters and gauges, and their Prometheus text exposition."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field

from archive_pipelines.prometheus_text import field_samples, uptime_samples


@dataclass
class CrawlMetrics:
    """Counters since the process started (monotonic, Prometheus `_total`) and gauges."""

    started_at: float = field(default_factory=time.time)
    pages: int = 0  # page fetches finished with a response or a final error
    pages_ok: int = 0  # 2xx responses
    fetch_errors: int = 0  # no usable response (connect, timeout, protocol ...)
    host_failures: int = 0  # connect/timeout/429/503 counted against a host
    hosts_retired: int = 0
    bombs: int = 0  # bodies cut by their decode ratio (decompression bombs)
    robots_fetches: int = 0  # robots.txt requests (rules loaded from the store not counted)
    robots_disallowed: int = 0
    body_bytes: int = 0
    new_blobs: int = 0
    conditional_requests: int = 0  # sent with the validators of an earlier crawl
    unchanged: int = 0  # of those, answered 304: archived as the earlier body, none received
    links_found: int = 0
    links_invalid: int = 0
    links_out_of_scope: int = 0
    links_repeated: int = 0  # dropped by the process-local recently-offered filter
    assets_over_budget: int = 0  # asset references past a page's (or stylesheet's) budget
    urls_offered: int = 0  # passed to add_urls
    urls_added: int = 0  # new to the frontier
    claims: int = 0
    claim_calls: int = 0
    leases_lost: int = 0
    budget_exhausted: int = 0
    redis_rebuilds: int = 0  # Redis found without the crawl's state and rebuilt from disk
    frontier_repairs: int = 0  # domains whose lost Redis state an audit repaired
    segments_closed: int = 0
    segments_reported: int = 0
    report_errors: int = 0
    segments_closed_idle: int = 0  # of segments_closed: closed because the crawl went idle
    # An S3 primary: segments uploaded to the bucket, still spooled locally, failed uploads.
    segments_uploaded: int = 0
    segments_spooled: int = 0
    segment_upload_errors: int = 0
    store_errors: int = 0  # bodies the blob store refused or could not be reached for
    # Browser capture (`--browser auto|always`): page loads in Chromium (each also counted in
    # `pages`), those that failed (no rendered DOM), Chromium relaunches after a crash, the
    # requests the loads made besides their documents, and of those the ones refused.
    browser_pages: int = 0
    browser_failures: int = 0
    browser_restarts: int = 0
    browser_requests: int = 0
    browser_refused: int = 0
    browser_hosts_learnt: int = 0  # auto: hosts whose sample render found what HTTP did not
    # URLs not fetched, by reason (scope/drops.py): too long, invalid, out of scope, beyond max depth ...
    urls_dropped: dict[str, int] = field(default_factory=dict)
    # Gauges.
    in_flight: int = 0
    queued_domains: int = 0  # claimed, waiting for a worker
    releases_pending: int = 0  # handled, waiting for a checkpoint or the next claim round
    checkpoint_ms: int = 0  # the last checkpoint's duration
    claim_round_ms: int = 0  # the last claim round's duration
    frontier_pending_bytes: int = 0
    frontier_ready_domains: int = 0
    frontier_due_domains: int = 0
    frontier_leased_domains: int = 0
    open_fds: int = 0  # this process's open descriptors (summed over processes when combined)
    rss_bytes: int = 0  # this process's resident memory
    # The crawl's URLs added to the seen filter, and its capacity (past it, new URLs are
    # dropped as seen: frontier/seen_capacity.py).
    seen_filter_urls: int = 0
    seen_filter_capacity: int = 0
    stopping: bool = False

    def uptime_s(self) -> float:
        return max(time.time() - self.started_at, 1e-9)


_GAUGES = frozenset({"in_flight", "queued_domains", "releases_pending", "checkpoint_ms",
                     "claim_round_ms", "frontier_pending_bytes",
                     "frontier_ready_domains", "frontier_due_domains",
                     "frontier_leased_domains", "stopping", "segments_spooled",
                     "open_fds", "rss_bytes", "seen_filter_urls", "seen_filter_capacity"})
_HELP = {
    "pages": "Page fetches finished (response or final error).",
    "pages_ok": "Page fetches answered 2xx.",
    "fetch_errors": "Page fetches without a usable response.",
    "robots_disallowed": "URLs skipped because robots.txt disallows them.",
    "urls_added": "URLs new to the frontier.",
    "assets_over_budget": "Asset references not queued: past the per-page asset budget.",
    "in_flight": "Fetches in progress.",
    "frontier_pending_bytes": "Bytes of frontier files not yet read.",
    "frontier_ready_domains": "Domains waiting in the ready queue.",
    "segments_closed_idle": "Page-index segments closed because the crawl went idle.",
    "segments_uploaded": "Segments uploaded to an S3 primary's bucket.",
    "segments_spooled": "Closed segments still in the data dir, waiting for their upload.",
    "segment_upload_errors": "Segment uploads to the S3 primary that failed (retried later).",
    "store_errors": "Pages not archived because the blob store failed (they stay queued).",
    "conditional_requests": "Requests sent with validators (If-None-Match, If-Modified-Since).",
    "unchanged": "Conditional requests answered 304 Not Modified: captured as the earlier body.",
    "browser_pages": "Pages loaded in the browser (Chromium).",
    "browser_failures": "Browser page loads that failed (no rendered page).",
    "browser_restarts": "Chromium relaunched after it crashed or was killed.",
    "browser_requests": "Requests browser page loads made besides their documents.",
    "browser_refused": "Browser requests refused (scope, robots, allowance, WebSocket).",
    "browser_hosts_learnt": "Hosts found to need the browser by a sample render (auto).",
    "open_fds": "Open file descriptors (frontier files, connections ...), all crawler processes.",
    "rss_bytes": "Resident memory in bytes, all crawler processes.",
    "seen_filter_urls": "URLs the crawl added to its seen filter (all processes and machines).",
    "seen_filter_capacity": "URLs the seen filter holds at its error rate; past it, new URLs "
                            "are increasingly dropped as already seen.",
    "bombs": "Bodies cut by their decode ratio (decompression bombs); three in a row retire a host.",
}


def render_prometheus(metrics: CrawlMetrics, prefix: str = "frontier") -> str:
    """Prometheus text format 0.0.4: `{prefix}_{name}_total` counters and gauges."""
    lines = field_samples(metrics, prefix, gauges=_GAUGES, help_texts=_HELP,
                          skip=("started_at", "urls_dropped"))
    name = f"{prefix}_urls_dropped_total"
    lines.append(f"# HELP {name} URLs not fetched, by reason.")
    lines.append(f"# TYPE {name} counter")
    lines += [f'{name}{{reason="{reason}"}} {count}'
              for reason, count in sorted(metrics.urls_dropped.items())]
    lines += uptime_samples(prefix, metrics.uptime_s())
    return "\n".join(lines) + "\n"


# Gauges that sample the shared frontier (the same value in every process) or a latency.
_SHARED_OR_WORST = frozenset({"checkpoint_ms", "claim_round_ms", "frontier_pending_bytes",
                              "frontier_ready_domains", "frontier_due_domains",
                              "frontier_leased_domains", "seen_filter_urls",
                              "seen_filter_capacity"})


def combine_metrics(parts: list[CrawlMetrics]) -> CrawlMetrics:
    """The metrics of several crawler processes as one: counters and local gauges add up;
    frontier samples and latencies take the largest; stopping if any is stopping."""
    total = CrawlMetrics()
    if not parts:
        return total
    for item in dataclasses.fields(total):
        values = [getattr(part, item.name) for part in parts]
        if item.name == "started_at":
            value: object = min(values)
        elif item.name == "stopping":
            value = any(values)
        elif item.name in _SHARED_OR_WORST:
            value = max(values)
        elif item.name == "urls_dropped":
            value = _add_up(values)
        else:
            value = sum(values)
        setattr(total, item.name, value)
    return total


def _add_up(counts: list[dict[str, int]]) -> dict[str, int]:
    total: dict[str, int] = {}
    for part in counts:
        for key, value in part.items():
            total[key] = total.get(key, 0) + value
    return total
