"""Schedules that look hourly and run their job when its interval (a setting, in hours) has
passed since its last run: the interval can change without redeploying, so the cron is
the granularity, and the description and skip reasons say when a run is due."""

from datetime import UTC, datetime, timedelta

import dagster as dg

from archive_pipelines.ops.replication_jobs import scrub_job
from archive_pipelines.ops.storage_jobs import verify_storage_job
from archive_pipelines.resources import SettingsResource
from archive_pipelines.run_labels import launched_by


def verification_due(last_start: datetime | None, now: datetime, interval_hours: int) -> bool:
    """True when the job never ran, or its last run started `interval_hours` ago or more."""
    return last_start is None or now - last_start >= timedelta(hours=interval_hours)


def _run_if_due(context: dg.ScheduleEvaluationContext, job_name: str, *,
                interval_hours: int, schedule_name: str) -> dg.RunRequest | dg.SkipReason:
    records = context.instance.get_run_records(filters=dg.RunsFilter(job_name=job_name),
                                                limit=1)
    last = (datetime.fromtimestamp(records[0].start_time, tz=UTC)
            if records and records[0].start_time else None)
    now = context.scheduled_execution_time or datetime.now(UTC)
    if last is not None and not verification_due(last, now, interval_hours):
        due = last + timedelta(hours=interval_hours)
        reason = (f"not due: the last {job_name} run started {last:%Y-%m-%d %H:%M} UTC, the "
                  f"next is due every {interval_hours} h, from {due:%Y-%m-%d %H:%M} UTC")
        context.log.info(reason)
        return dg.SkipReason(reason)
    context.log.info(f"due (every {interval_hours} h): launching {job_name}"
                     + (f"; the last run started {last:%Y-%m-%d %H:%M} UTC" if last else
                        "; it never ran"))
    return dg.RunRequest(run_key=f"{job_name}-{now:%Y%m%d%H}",
                         tags=launched_by("schedule", schedule_name))


@dg.schedule(job=verify_storage_job, cron_schedule="0 * * * *",
             default_status=dg.DefaultScheduleStatus.RUNNING,
             description="Verifies storage once every storage.verify_interval_hours (24 by "
                         "default; looks hourly). Read-only: on by default.")
def verify_storage_schedule(context: dg.ScheduleEvaluationContext,
                            settings: SettingsResource) -> dg.RunRequest | dg.SkipReason:
    return _run_if_due(context, verify_storage_job.name,
                       interval_hours=settings.load().storage.verify_interval_hours,
                       schedule_name="verify_storage_schedule")


@dg.schedule(job=scrub_job, cron_schedule="30 * * * *",
             default_status=dg.DefaultScheduleStatus.STOPPED,
             description="Scrubs every store once every replication.scrub_interval_hours (168 "
                         "by default; looks hourly). Off by default: it reads every object "
                         "of every store (on S3, one GET each).")
def scrub_schedule(context: dg.ScheduleEvaluationContext,
                   settings: SettingsResource) -> dg.RunRequest | dg.SkipReason:
    return _run_if_due(context, scrub_job.name,
                       interval_hours=settings.load().replication.scrub_interval_hours,
                       schedule_name="scrub_schedule")
