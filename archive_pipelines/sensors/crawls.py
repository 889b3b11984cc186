"""The crawls sensor: records each crawl request in the `crawls` asset (one partition per
crawl_id) whenever what it shows changes (queued, taken, progress, ended), and evaluates
the `crawl_taken` check when its result changes.

The decision is `crawls.reports.changed_requests`; the cursor holds a signature per
request listed (every queued or running one, and the latest ended ones), and the check's
last result.
"""

from __future__ import annotations

import json

import dagster as dg

from archive_pipelines.assets.crawl_requests import crawl_metadata, crawls, evaluate_crawl_taken
from archive_pipelines.assets.partitions import CRAWL_IDS, crawl_ids
from archive_pipelines.catalog import Catalog, CrawlRequest
from archive_pipelines.crawls.reports import changed_requests
from archive_pipelines.crawls.requests import crawler_presence, list_crawls
from archive_pipelines.resources import CatalogResource

RECENT_ENDED = 100  # ended requests listed per tick besides every active one


def listed_requests(catalog: Catalog) -> list[CrawlRequest]:
    """Every queued or running request and the latest ended ones."""
    active = list_crawls(catalog, states=("queued", "running"), limit=100_000)
    recent = list_crawls(catalog, limit=RECENT_ENDED)
    return list({r.crawl_id: r for r in [*active, *recent]}.values())


@dg.sensor(minimum_interval_seconds=30, default_status=dg.DefaultSensorStatus.RUNNING,
           asset_selection=[crawls.key],
           description="Records every crawl (queued, running, ended) in the crawls asset as it "
                       "changes, and turns the crawl_taken check red while a queued crawl "
                       "waits for a crawler. Reads the catalog; launches nothing.")
def crawls_sensor(context: dg.SensorEvaluationContext,
                  catalog: CatalogResource) -> dg.SensorResult:
    cursor = json.loads(context.cursor) if context.cursor else {}
    opened = catalog.open()
    changes = changed_requests(listed_requests(opened), cursor.get("seen", {}))
    presence = crawler_presence(opened)
    known = set(context.instance.get_dynamic_partitions(CRAWL_IDS))
    new_keys = [r.crawl_id for r in changes.changed if r.crawl_id not in known]
    events: list[dg.AssetMaterialization | dg.AssetCheckEvaluation] = [
        dg.AssetMaterialization(asset_key=crawls.key, partition=r.crawl_id,
                                metadata=crawl_metadata(r, presence))
        for r in changes.changed]
    check = evaluate_crawl_taken(catalog)
    waiting = check.metadata["waiting"].value
    check_state = f"{'passed' if check.passed else 'failed'}:{waiting}"
    if check_state != cursor.get("check"):
        events.append(check)
    for request in changes.changed:
        context.log.info(f"{request.crawl_id}: {request.state}")
    return dg.SensorResult(
        asset_events=events,
        dynamic_partitions_requests=[crawl_ids.build_add_request(new_keys)] if new_keys else [],
        cursor=json.dumps({"seen": changes.seen, "check": check_state}),
        skip_reason=None if events else "no crawl changed")
