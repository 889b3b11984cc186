"""The run-failure sensor: every failed run of this code location is recorded where an
operator looks, `logs/run-failures.jsonl` in the data dir, and as an ERROR line in the
sensor's tick log (Dagit, Automation, `run_failure_sensor`, View logs). No network call."""

from datetime import UTC, datetime

import dagster as dg

from archive_pipelines.datadir import DataDir
from archive_pipelines.datadir.run_failures import RunFailure, record_run_failure
from archive_pipelines.resources import SettingsResource
from archive_pipelines.run_labels import LAUNCHED_BY

PARTITION_TAG = "dagster/partition"


@dg.run_failure_sensor(name="run_failure_sensor", default_status=dg.DefaultSensorStatus.RUNNING,
                       description="Records every failed run (job, partition, who launched it, "
                                   "why) in logs/run-failures.jsonl of the data dir, and logs "
                                   "it as an error. Writes one line per failure: on by default.")
def run_failure_sensor(context: dg.RunFailureSensorContext, settings: SettingsResource) -> None:
    run = context.dagster_run
    event = context.failure_event
    record = context.instance.get_run_record_by_id(run.run_id)
    ended = record.end_time if record and record.end_time else None
    failure = RunFailure(
        run_id=run.run_id, job_name=run.job_name,
        failed_at=datetime.fromtimestamp(ended, tz=UTC) if ended else datetime.now(UTC),
        launched_by=run.tags.get(LAUNCHED_BY, ""),
        message=event.message or "no message",
        partition=run.tags.get(PARTITION_TAG, ""))
    path = record_run_failure(DataDir(settings.load().data_dir).logs, failure)
    context.log.error(f"{failure.line()} (recorded in {path})")
