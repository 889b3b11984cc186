"""One schedule per `[[crawls]]` definition with a cadence: `crawl_<name>_schedule` launches
`crawl_job` for it (cron in UTC).

On by default: writing a cadence in archive.toml is the operator's decision to crawl on it,
and a cadence that silently did nothing until switched on in Dagit as well would surprise
more than a crawl does. A tick skips while the definition's previous crawl is still queued
or running (crawls of one definition do not pile up behind a slow or absent crawler); a
crawl queued by hand (`crawl_job`, `crawls queue`) always queues.
"""

from __future__ import annotations

import logging

import dagster as dg

from archive_pipelines.archive_error import SettingsError
from archive_pipelines.assets.crawl_job import DEFINITION_TAG, crawl_job
from archive_pipelines.crawls.definitions import CrawlDefinition
from archive_pipelines.crawls.requests import list_crawls
from archive_pipelines.resources import CatalogResource
from archive_pipelines.run_labels import launched_by
from archive_pipelines.settings import Settings, load_settings

log = logging.getLogger(__name__)


def schedule_name(definition_name: str) -> str:
    """`crawl_<name>_schedule` ('-' becomes '_': Dagster names are words)."""
    return f"crawl_{definition_name.replace('-', '_')}_schedule"


def crawl_schedule(definition: CrawlDefinition) -> dg.ScheduleDefinition:
    """The schedule that queues a crawl of `definition` on its cadence."""
    assert definition.cadence is not None
    name = schedule_name(definition.name)
    run_config = {"ops": {"queue_crawl_op": {"config": {"definition": definition.name}}}}

    @dg.schedule(name=name, job=crawl_job, cron_schedule=definition.cadence,
                 execution_timezone="UTC", default_status=dg.DefaultScheduleStatus.RUNNING,
                 description=f"Queues a crawl of {definition.name} ({definition.cadence}, UTC; "
                             f"seeds: {', '.join(definition.seeds)}); skips while its previous "
                             "crawl is still queued or running.")
    def _schedule(context: dg.ScheduleEvaluationContext,
                  catalog: CatalogResource) -> dg.RunRequest | dg.SkipReason:
        active = list_crawls(catalog.open(), name=definition.name,
                             states=("queued", "running"), limit=1)
        if active:
            reason = (f"the previous crawl of {definition.name}, {active[0].crawl_id}, is "
                      f"still {active[0].state}: not queuing another")
            context.log.info(reason)
            return dg.SkipReason(reason)
        when = context.scheduled_execution_time
        key = f"{name}-{when:%Y%m%dT%H%M}" if when else None
        context.log.info(f"queuing a crawl of {definition.name}")
        return dg.RunRequest(run_key=key, run_config=run_config,
                             tags={**launched_by("schedule", name),
                                   DEFINITION_TAG: definition.name})

    return _schedule


def crawl_schedules(settings: Settings) -> list[dg.ScheduleDefinition]:
    return [crawl_schedule(d) for d in settings.crawl_definitions if d.cadence is not None]


def configured_crawl_schedules() -> list[dg.ScheduleDefinition]:
    """The schedules of the definitions in the data dir's archive.toml ($ARCHIVE_DATA_DIR);
    none, with the reason logged, when the settings do not load: the code location still
    loads, and every job that reads the settings says what is wrong with them."""
    try:
        return crawl_schedules(load_settings())
    except SettingsError as exc:
        log.warning("no crawl schedules: %s", exc)
        return []
