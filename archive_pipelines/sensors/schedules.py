"""Schedules. The verify schedule ticks hourly and runs when `verify_interval_hours` is due."""

from datetime import UTC, datetime, timedelta

import dagster as dg

from archive_pipelines.ops.replication_jobs import scrub_job
from archive_pipelines.ops.storage_jobs import verify_storage_job
from archive_pipelines.settings import load_settings


def verification_due(last_start: datetime | None, now: datetime, interval_hours: int) -> bool:
    """True when no verification ran, or the last started `interval_hours` ago or more."""
    return last_start is None or now - last_start >= timedelta(hours=interval_hours)


@dg.schedule(job=verify_storage_job, cron_schedule="0 * * * *",
             default_status=dg.DefaultScheduleStatus.RUNNING,
             description="Verify storage every storage.verify_interval_hours (default 24).")
def verify_storage_schedule(context: dg.ScheduleEvaluationContext):  # type: ignore[no-untyped-def]
    interval = load_settings().storage.verify_interval_hours
    last = _last_start(context, verify_storage_job.name)
    now = context.scheduled_execution_time or datetime.now(UTC)
    if not verification_due(last, now, interval):
        return dg.SkipReason(f"last verification {last:%Y-%m-%d %H:%M} UTC; "
                             f"next after {interval} h")
    return dg.RunRequest(run_key=f"verify-{now:%Y%m%d%H}")


def _last_start(context: dg.ScheduleEvaluationContext, job_name: str) -> datetime | None:
    runs = context.instance.get_runs(filters=dg.RunsFilter(job_name=job_name), limit=1)
    return (datetime.fromtimestamp(runs[0].start_time, tz=UTC)
            if runs and runs[0].start_time else None)


@dg.schedule(job=scrub_job, cron_schedule="30 * * * *",
             default_status=dg.DefaultScheduleStatus.RUNNING,
             description="Scrub stored copies every replication.scrub_interval_hours.")
def scrub_schedule(context: dg.ScheduleEvaluationContext):  # type: ignore[no-untyped-def]
    interval = load_settings().replication.scrub_interval_hours
    last = _last_start(context, scrub_job.name)
    now = context.scheduled_execution_time or datetime.now(UTC)
    if not verification_due(last, now, interval):
        return dg.SkipReason(f"last scrub {last:%Y-%m-%d %H:%M} UTC; next after {interval} h")
    return dg.RunRequest(run_key=f"scrub-{now:%Y%m%d%H}")
