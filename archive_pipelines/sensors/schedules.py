"""Schedules. The verify schedule ticks hourly and runs when `verify_interval_hours` is due."""

from datetime import UTC, datetime, timedelta

import dagster as dg

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
    runs = context.instance.get_runs(
        filters=dg.RunsFilter(job_name=verify_storage_job.name), limit=1)
    last = (datetime.fromtimestamp(runs[0].start_time or 0, tz=UTC)
            if runs and runs[0].start_time else None)
    now = context.scheduled_execution_time or datetime.now(UTC)
    if not verification_due(last, now, interval):
        return dg.SkipReason(f"last verification {last:%Y-%m-%d %H:%M} UTC; "
                             f"next after {interval} h")
    return dg.RunRequest(run_key=f"verify-{now:%Y%m%d%H}")
