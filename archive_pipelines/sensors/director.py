"""The archival director sensor: under-replicated blobs become `archive_batch_job` runs."""


import dagster as dg

from archive_pipelines.ops.replication_jobs import archive_batch_job
from archive_pipelines.replication import plan_batches
from archive_pipelines.resources.replication import ReplicationResource
from archive_pipelines.run_keys import batch_run_key
from archive_pipelines.run_labels import launched_by


@dg.sensor(job=archive_batch_job, minimum_interval_seconds=60,
           default_status=dg.DefaultSensorStatus.RUNNING,
           description="Finds blobs with fewer copies than replication.retention (a page of "
                       "the catalog per tick) and launches one archive_batch_job run per batch.")
def archival_director_sensor(context: dg.SensorEvaluationContext,
                             replication: ReplicationResource) -> dg.SensorResult:
    setup = replication.open(probe=False)  # planning reads the catalog only: a tick never
    # waits on an unreachable store (the runs it launches probe, report and skip them)
    tick = plan_batches(setup.catalog, setup.replicas, retention=setup.policy.retention,
                        max_age=setup.max_age, batch_size=setup.policy.batch_size,
                        cursor=int(context.cursor or 0), max_batches=4)
    runs = [dg.RunRequest(run_key=batch_run_key("archive", batch), run_config={
        "ops": {"archive_batch_op": {"config": {"sha256s": batch}}}},
        tags=launched_by("sensor", "archival_director_sensor")) for batch in tick.batches]
    after = ("the catalog was scanned to its end, the next tick starts over" if tick.wrapped
             else "the next tick reads on")
    skip = None if runs else (f"no blob short of {setup.policy.retention} copies among the "
                              f"{tick.scanned:,} looked at this tick ({after})")
    context.log.info(skip or f"launching {len(runs)} archive_batch_job run(s) for "
                             f"{sum(len(batch) for batch in tick.batches):,} blobs short of "
                             f"{setup.policy.retention} copies")
    return dg.SensorResult(run_requests=runs, cursor=str(tick.next_cursor), skip_reason=skip)
