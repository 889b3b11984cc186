"""`crawls`: one partition per queued crawl (a definition's run on the crawler), recorded by
the `crawls_sensor` as the crawl is queued, runs and ends; and `crawl_taken`, the check that
turns red when a queued crawl waits with no crawler to take it."""

from __future__ import annotations

from typing import Any

import dagster as dg

from archive_pipelines.assets.metadata import code_references, counts
from archive_pipelines.assets.partitions import crawl_ids
from archive_pipelines.catalog import CrawlRequest
from archive_pipelines.crawls.reports import crawl_figures, times, where_it_stands
from archive_pipelines.crawls.requests import (
    CrawlerPresence,
    crawler_presence,
    queue_crawl,
    waiting_too_long,
)
from archive_pipelines.resources import CatalogResource
from archive_pipelines.run_labels import OWNERS

CRAWL_TAKEN = "crawl_taken"
MAX_LISTED = 20  # waiting crawls named in the check's metadata

crawls = dg.AssetSpec(
    "crawls", partitions_def=crawl_ids, group_name="crawler", kinds={"python"}, owners=OWNERS,
    tags={"area": "crawler"},
    description="Crawls of the definitions in archive.toml ([[crawls]]), one partition per "
                "crawl (its crawl_id), queued by `crawl_job`, a definition's schedule or "
                "`archive-pipelines crawls queue NAME`, and run by `frontier-service serve`. "
                "The `crawls_sensor` records each crawl as it is queued, runs and ends: "
                "state, pages, new bodies, unchanged pages, errors, why it stopped, and its "
                "queued / started / finished times. Its pages become `captures` as usual.",
    metadata=code_references(queue_crawl, crawl_figures))


def crawl_metadata(request: CrawlRequest, presence: CrawlerPresence) -> dict[str, Any]:
    """What Dagit shows of a crawl: its state in words, figures, times and definition."""
    figures = crawl_figures(request)
    definition = request.definition
    return {
        "crawl_id": request.crawl_id, "definition": request.definition_name,
        "state": request.state, "status": where_it_stands(request, presence),
        **counts({"pages": figures.pages, "new_bodies": figures.new_bodies,
                  "unchanged": figures.unchanged, "errors": figures.errors,
                  "attempts": request.attempts}),
        "stopped_because": figures.stopped_because or "-",
        "requested_by": request.requested_by, "crawler": request.claimed_by or "-",
        **times(request),
        "seeds": dg.MetadataValue.md("\n".join(f"- {s}" for s in definition.get("seeds", []))
                                     or "none"),
        "definition_snapshot": dg.MetadataValue.json(definition),
    }


def crawl_taken_evaluation(requests: list[CrawlRequest], presence: CrawlerPresence, *,
                           alert_minutes: float) -> dg.AssetCheckEvaluation:
    """Red (ERROR) while a crawl has waited `alert_minutes` or more with nothing taking it."""
    listed = "\n".join(f"- {r.crawl_id} (queued {r.queued_at:%Y-%m-%d %H:%M:%S} UTC by "
                       f"{r.requested_by})" for r in requests[:MAX_LISTED])
    if len(requests) > MAX_LISTED:
        listed += f"\n- ... and {len(requests) - MAX_LISTED} more"
    summary = (f"{len(requests)} crawl(s) queued for {alert_minutes:g} min or more and not "
               f"taken: {presence.describe()}" if requests else
               f"no crawl has waited {alert_minutes:g} min or more; {presence.describe()}")
    return dg.AssetCheckEvaluation(
        asset_key=crawls.key, check_name=CRAWL_TAKEN, passed=not requests,
        severity=dg.AssetCheckSeverity.ERROR, description=summary,
        metadata={"waiting": dg.MetadataValue.int(len(requests)),
                  "crawlers_alive": dg.MetadataValue.int(len(presence.crawlers)),
                  "summary": dg.MetadataValue.text(summary),
                  "waiting_crawls": dg.MetadataValue.md(listed or "none")})


def evaluate_crawl_taken(catalog: CatalogResource) -> dg.AssetCheckEvaluation:
    """The check's evaluation now, from the catalog the resource opens."""
    settings = catalog.project_settings()
    opened = catalog.open(settings)
    minutes = settings.crawl.queued_alert_minutes
    return crawl_taken_evaluation(waiting_too_long(opened, older_than_s=minutes * 60),
                                  crawler_presence(opened), alert_minutes=minutes)


@dg.asset_check(asset=crawls.key, name=CRAWL_TAKEN, blocking=False,
                description="Every queued crawl is taken by a crawler within "
                            "[crawl] queued_alert_minutes (10 by default). Red: crawls wait "
                            "and no `frontier-service serve` takes them (none runs, or it is "
                            "busy). The crawls_sensor evaluates it as requests change.")
def crawl_taken(catalog: CatalogResource) -> dg.AssetCheckResult:
    found = evaluate_crawl_taken(catalog)
    return dg.AssetCheckResult(passed=found.passed, severity=found.severity,
                               description=found.description, metadata=found.metadata)
