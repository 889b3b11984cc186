"""Capture QA in Dagster: a sample of a `captures` run's new browser captures checked against
their replay (figures in the run's metadata), and the `capture_qa` asset check, which fails
while any browser capture's newest check scored under `qa.threshold`."""

from __future__ import annotations

import dagster as dg

from archive_pipelines.assets.metadata import count, problem_list, rate
from archive_pipelines.qa.browser_launch import ChromiumMissing
from archive_pipelines.qa.summary import describe, summarize
from archive_pipelines.resources import StorageResource
from archive_pipelines.storage.assembly import StorageParts

CAPTURE_QA = "capture_qa"
MAX_LISTED = 50


def sample_qa_metadata(context: dg.AssetExecutionContext, parts: StorageParts,
                       day: str) -> dict[str, dg.MetadataValue]:
    """Check up to `qa.sample_pages` of the day's browser captures never checked; the figures
    as metadata (`qa_checked`, `qa_median_score`, `qa_below_threshold`, the pages under it)."""
    # Playwright loads only when a run checks captures (Dagster loads this module at start).
    from playwright.async_api import Error as PlaywrightError

    from archive_pipelines.qa.capture_check import StoreFailed
    from archive_pipelines.qa.sampling import check_with_settings, sample_unchecked

    qa = parts.settings.qa
    sample = sample_unchecked(parts.catalog, day, count=qa.sample_pages)
    if not sample:
        return {"qa_checked": count(0)}
    try:
        checked = check_with_settings(sample, catalog=parts.catalog, store=parts.primary.store,
                                      settings=parts.settings)
    except (ChromiumMissing, StoreFailed, PlaywrightError, OSError) as exc:
        # The captures are ingested whatever QA does; the check stays as it was.
        context.log.warning(f"capture QA not run: {exc}")
        return {"qa_checked": count(0), "qa_error": dg.MetadataValue.text(str(exc)[:500])}
    summary = summarize(checked, threshold=qa.threshold)
    lines = [describe(c.page.url, c.check.score, missing=c.check.missing, leaks=c.check.leaks,
                      error=c.check.error) for c in summary.below]
    for line in lines[:MAX_LISTED]:
        context.log.warning(f"capture QA under {qa.threshold:g}: {line}")
    metadata: dict[str, dg.MetadataValue] = {
        "qa_checked": count(summary.checked), "qa_below_threshold": count(len(summary.below)),
        "qa_threshold": rate(qa.threshold, 3), "qa_below": problem_list(lines, MAX_LISTED)}
    if summary.median is not None:
        metadata["qa_median_score"] = rate(summary.median, 4)
    return metadata


@dg.asset_check(asset="captures", name=CAPTURE_QA,
                description="Browser captures hold up against their replay: no capture's "
                            "newest check (a sample of each run's new browser captures, and "
                            "`archive-pipelines captures qa URL`) scored under `qa.threshold` "
                            "(screenshots alike, resources answered from the archive, nothing "
                            "leaving the replay server). Fails listing the pages under it.")
def capture_qa(storage: StorageResource) -> dg.AssetCheckResult:
    parts = storage.open()
    threshold = parts.settings.qa.threshold
    below, lowest = parts.catalog.qa.below(threshold, limit=MAX_LISTED)
    lines = [describe(r.url, r.check.score, missing=r.check.missing, leaks=r.check.leaks,
                      error=r.check.error) for r in lowest]
    if below > len(lines):
        lines.append(f"... and {below - len(lines)} more")
    return dg.AssetCheckResult(
        passed=below == 0, severity=dg.AssetCheckSeverity.ERROR,
        metadata={"below_threshold": count(below), "threshold": rate(threshold, 3),
                  "pages": dg.MetadataValue.md("\n".join(f"- {line}" for line in lines) or "none")})
