"""`crawl_job`: queue one crawl of a definition (archive.toml `[[crawls]]`) for the
long-running crawler. The run ends once the crawl is queued: the crawl itself runs in
`frontier-service serve`, and the `crawls` asset follows it (`crawls_sensor`)."""

import dagster as dg
from pydantic import Field

from archive_pipelines.assets.crawl_requests import crawl_metadata
from archive_pipelines.crawls.reports import NOT_TAKEN
from archive_pipelines.crawls.requests import crawler_presence, queue_crawl
from archive_pipelines.resources import CatalogResource

SCHEDULE_TAG = "dagster/schedule_name"  # Dagster's own tag on a scheduled run
DEFINITION_TAG = "archive/crawl_definition"


class CrawlJobConfig(dg.Config):
    definition: str = Field(description="The name of a [[crawls]] definition in archive.toml.")


@dg.op(description="Queue one crawl of the definition for the crawler (frontier-service serve).")
def queue_crawl_op(context: dg.OpExecutionContext, config: CrawlJobConfig,
                   catalog: CatalogResource) -> dg.Output[str]:
    settings = catalog.project_settings()
    try:
        definition = settings.crawl_definition(config.definition)
    except KeyError:
        known = ", ".join(d.name for d in settings.crawl_definitions) or "none"
        raise dg.Failure(f"no crawl definition is named {config.definition!r} in "
                         f"{settings.data_dir / 'archive.toml'} (defined: {known})") from None
    schedule = context.run.tags.get(SCHEDULE_TAG)
    requested_by = f"schedule {schedule}" if schedule else f"dagster run {context.run_id}"
    opened = catalog.open(settings)
    request = queue_crawl(opened, definition.as_dict(), name=definition.name,
                          requested_by=requested_by)
    presence = crawler_presence(opened)
    if presence.alive:
        context.log.info(f"queued crawl {request.crawl_id} of {definition.name}: "
                         f"{presence.describe()}; the crawls asset follows it")
    else:
        context.log.info(f"queued crawl {request.crawl_id}; {NOT_TAKEN}: "
                         f"{presence.describe()}")
    return dg.Output(request.crawl_id, metadata={
        **crawl_metadata(request, presence), "crawler_alive": presence.alive})


@dg.job(description="Queue one crawl of a [[crawls]] definition (config: definition) for "
                    "frontier-service serve; the crawls asset follows it. A definition with "
                    "a cadence has its own schedule, crawl_<name>_schedule.",
        tags={"area": "crawler"})
def crawl_job() -> None:
    queue_crawl_op()
