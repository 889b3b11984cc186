"""`captures`: a day's crawl segments recorded in the catalog, and the job that materializes it.

A problem in a day's segments (a refused record, a body the store lacks, a segment cut
mid-record or unreadable) does not throw away what could be ingested: the asset returns its
materialization with the counts and logs the problems, and the blocking `captures_complete`
check, which reads what the ledger recorded, fails: the check is red on the asset, the captures
stay in the catalog. The check is its own `asset_check`, so it also runs alone (a check
declared inside the asset could not: DagsterInvalidSubsetError).
"""

from datetime import timedelta

import dagster as dg
import pandas as pd

from archive_pipelines.assets.capture_qa import sample_qa_metadata
from archive_pipelines.assets.crawl import crawl_segments
from archive_pipelines.assets.metadata import code_references, counts, problem_list, table
from archive_pipelines.assets.partitions import crawl_days
from archive_pipelines.captures.lookup import day_captures
from archive_pipelines.captures.segment_ingest import (
    CapturePrimary,
    SegmentReport,
    ingest_crawl,
)
from archive_pipelines.catalog import SiteCaptures
from archive_pipelines.replay.links import capture_link, replay_base
from archive_pipelines.resources import StorageResource
from archive_pipelines.run_labels import BLOB_STORE_POOL, OWNERS
from archive_pipelines.sizes import human_bytes

CAPTURES_COMPLETE = "captures_complete"
MAX_LISTED = 50  # problems listed in the check's metadata and the run log; the rest are counted


# Fresh while a crawl runs: the captures sensor ingests new segments within minutes.
@dg.asset(partitions_def=crawl_days, deps=[crawl_segments], group_name="crawler",
          pool=BLOB_STORE_POOL, kinds={"python", "filesystem"}, owners=OWNERS,
          tags={"area": "crawler", "blob_store": "writes"},
          freshness_policy=dg.FreshnessPolicy.time_window(fail_window=timedelta(hours=24),
                                                          warn_window=timedelta(hours=6)),
          metadata=code_references(ingest_crawl, day_captures))
def captures(context: dg.AssetExecutionContext, storage: StorageResource) -> dg.MaterializeResult:
    """Crawled pages of the day in the catalog: one capture per fetch, redirect hop and
    sub-request, which `archive-pipelines captures URL` looks up.

    Materializing a day records the day's crawl segments (sessions/<day>/<session>/*.jsonl) that
    the catalog does not hold yet; segments already ingested are skipped, so a rerun is safe.
    Metadata: links to replay the first page of a few of the day's sites (`replay`,
    `replay_first_page`: the `archive-pipelines replay` server's address from the settings);
    the day's figures as the catalog holds them (`day_`: segments, sites, pages,
    captures, body bytes, and `day_pages_per_site`) and what this run ingested (`run_`:
    segments, pages, captures, new vs duplicate body bytes, pages per status class). When a
    record is refused, a body is missing, or a segment is cut or unreadable, what could be
    ingested is kept, the `captures_complete` check fails with the list of problems and the
    run fails. Then up to `qa.sample_pages` of the day's new browser captures are checked
    against their replay (`qa_checked`, `qa_median_score`, `qa_below_threshold` under
    `qa.threshold`, and `qa_below`, those pages); the `capture_qa` check lists every browser
    capture whose newest check scored under the threshold.
    """
    parts = storage.open()
    primary = CapturePrimary(parts.primary.store, parts.primary.store_id, parts.views.farm,
                             parts.views.crawl)

    def log_segment(segment: SegmentReport) -> None:
        context.log.info(f"{segment.path}: {segment.outcome}, {segment.pages} pages, "
                         f"{segment.captures} captures")

    report = ingest_crawl(parts.catalog, primary, parts.settings.data_dir,
                          day=context.partition_key, on_segment=log_segment)
    for line in report.log_lines():
        context.log.info(line)
    problems = report.problems()
    for line in problems[:MAX_LISTED]:
        context.log.warning(line)
    skipped = [line for line in report.skipped if line.startswith(f"sessions/{context.partition_key}/")]
    for line in skipped[:MAX_LISTED]:
        context.log.warning(f"skipped {line}")
    totals = report.as_metadata() | {"skipped_entries": len(skipped),
                                      "segments_unreadable_or_changed": len(report.failed)}
    qa = sample_qa_metadata(context, parts, context.partition_key)
    day = day_captures(parts.catalog, context.partition_key)
    figures = day.as_metadata()
    replay = replay_base(parts.settings.replay.host, parts.settings.replay.port)
    links = [(page.site, capture_link(replay, url=page.url, fetched_ms=page.fetched_ms))
             for page in day.first_pages]
    return dg.MaterializeResult(metadata={
        **({"replay_first_page": dg.MetadataValue.url(links[0][1])} if links else {}),
        "replay": dg.MetadataValue.md(_replay_links(links)),
        **counts(figures),
        **counts({f"run_{name}": value for name, value in totals.items()}),
        "day_pages_per_site": table(_sites_frame(day.sites)),
        "summary": dg.MetadataValue.md(
            f"The day: {figures['day_pages']:,} pages ({figures['day_captures']:,} captures) "
            f"of {figures['day_sites']:,} site(s) in {figures['day_segments']:,} segment(s). "
            f"This run: {totals['pages']:,} pages ({totals['captures']:,} captures) in "
            f"{totals['segments_ingested']:,} new segment(s); bodies "
            f"{human_bytes(totals['new_body_bytes'])} new, "
            f"{human_bytes(totals['duplicate_body_bytes'])} already stored"),
        "problems": problem_list(problems, MAX_LISTED), **qa})


def _replay_links(links: list[tuple[str, str]]) -> str:
    if not links:
        return "No page of the day has a stored body to replay."
    listed = "\n".join(f"- [{site}]({link})" for site, link in links)
    return ("The day's first page of each site (a few), as it was; start the replay server "
            f"first: `archive-pipelines replay`.\n\n{listed}")


def _sites_frame(sites: list[SiteCaptures]) -> pd.DataFrame:
    """The day's captures per site (all of the day's segments, not only this run's)."""
    frame = pd.DataFrame([vars(site) for site in sites],
                         columns=["site", "pages", "captures", "body_bytes"])
    frame["body_size"] = frame["body_bytes"].map(human_bytes)
    return frame


captures_job = dg.define_asset_job(
    "captures_job", selection=[captures],
    description="Ingest a day's crawl segments into the catalog (the `captures` asset).")


@dg.asset_check(asset=captures, name=CAPTURES_COMPLETE, blocking=True,
                description="Every crawl segment ingested so far (all days) was ingested as "
                            "written: no record refused, no body missing from the store, no "
                            "segment cut mid-record. Its figures are archive-wide. "
                            "Blocking: a failure stops what depends on the captures in the run.")
def captures_complete(storage: StorageResource) -> dg.AssetCheckResult:
    parts = storage.open()
    with parts.catalog.reading() as tx:
        found = tx.captures.ingest_shortfalls()
    return dg.AssetCheckResult(passed=not any(found.values()), severity=dg.AssetCheckSeverity.ERROR,
                               metadata=counts({f"archive_{k}": v for k, v in found.items()}))
