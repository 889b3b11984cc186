"""Schedules that tick hourly and run their job when its interval (from the configured
settings resource) is due."""

from datetime import UTC, datetime, timedelta

import dagster as dg

from archive_pipelines.ops.replication_jobs import scrub_job
from archive_pipelines.ops.storage_jobs import verify_storage_job
from archive_pipelines.resources import SettingsResource


def verification_due(last_start: datetime | None, now: datetime, interval_hours: int) -> bool:
    """True when the job never ran, or its last run started `interval_hours` ago or more."""
    return last_start is None or now - last_start >= timedelta(hours=interval_hours)


def _run_if_due(context: dg.ScheduleEvaluationContext, job_name: str,
                interval_hours: int) -> dg.RunRequest | dg.SkipReason:
    records = context.instance.get_run_records(filters=dg.RunsFilter(job_name=job_name),
                                                limit=1)
    last = (datetime.fromtimestamp(records[0].start_time, tz=UTC)
            if records and records[0].start_time else None)
    now = context.scheduled_execution_time or datetime.now(UTC)
    if last is not None and not verification_due(last, now, interval_hours):
        return dg.SkipReason(f"last {job_name} run {last:%Y-%m-%d %H:%M} UTC; "
                             f"next after {interval_hours} h")
    return dg.RunRequest(run_key=f"{job_name}-{now:%Y%m%d%H}")


@dg.schedule(job=verify_storage_job, cron_schedule="0 * * * *",
             default_status=dg.DefaultScheduleStatus.RUNNING,
             description="Verify storage every storage.verify_interval_hours (default 24).")
def verify_storage_schedule(context: dg.ScheduleEvaluationContext,
                            settings: SettingsResource) -> dg.RunRequest | dg.SkipReason:
    return _run_if_due(context, verify_storage_job.name,
                       settings.load().storage.verify_interval_hours)


@dg.schedule(job=scrub_job, cron_schedule="30 * * * *",
             default_status=dg.DefaultScheduleStatus.RUNNING,
             description="Scrub stored copies every replication.scrub_interval_hours.")
def scrub_schedule(context: dg.ScheduleEvaluationContext,
                   settings: SettingsResource) -> dg.RunRequest | dg.SkipReason:
    return _run_if_due(context, scrub_job.name,
                       settings.load().replication.scrub_interval_hours)
