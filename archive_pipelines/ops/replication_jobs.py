"""Replication jobs: one worker batch, the director (for cron/CI), and scrub."""

import dagster as dg
from pydantic import Field

from archive_pipelines.replication import (
    ReplicationFailed,
    archive_batch,
    plan_scrubs,
    replicate_until_met,
    run_scrubs,
)
from archive_pipelines.resources.replication import ReplicationResource


class ArchiveBatchConfig(dg.Config):
    sha256s: list[str] = Field(default_factory=list, description="The batch (from the director).")


@dg.op(description="Bring one batch of blobs to the retention policy (seed 004's worker).")
def archive_batch_op(context: dg.OpExecutionContext, config: ArchiveBatchConfig,
                     replication: ReplicationResource) -> dg.Output[int]:
    setup = replication.open()
    policy = setup.policy
    try:
        report = archive_batch(setup.catalog, setup.replicas, config.sha256s,
                               retention=policy.retention, max_age=setup.max_age,
                               width=policy.copier_width)
    except ReplicationFailed as exc:
        raise dg.Failure(str(exc)) from exc
    for line in report.errors[:20]:
        context.log.warning(line)
    return dg.Output(sum(report.created.values()), metadata={
        "requested": report.requested, "copies_made": sum(report.created.values()),
        "bytes_copied": sum(report.bytes_copied.values()),
        "corrupted_found": sum(report.corrupted_found.values()),
        "missing_found": sum(report.missing_found.values())})


@dg.job(description="Copy one batch of under-replicated blobs (launched by the director).")
def archive_batch_job() -> None:
    archive_batch_op()


class DirectorConfig(dg.Config):
    max_batches: int = Field(default=100, ge=1, description="Batches to run in this job.")


@dg.op(description="Find under-replicated blobs and bring them to the policy, batch by batch.")
def archive_director_op(context: dg.OpExecutionContext, config: DirectorConfig,
                        replication: ReplicationResource) -> dg.Output[int]:
    report = replicate_until_met(replication.open(), max_ticks=config.max_batches)
    copies = sum(report.created.values())
    if report.failures:
        raise dg.Failure(f"{report.failures} object(s) could not be copied; a later run retries")
    context.log.info(f"{copies} copies made")
    return dg.Output(copies, metadata={"copies_made": copies})


@dg.job(description="The archival director as a job, for cron or CI (the sensor does the "
                    "same continuously, one run per batch).")
def archive_director_job() -> None:
    archive_director_op()


class ScrubConfig(dg.Config):
    store: str = Field(default="", description="Store to scrub; empty = every store.")
    prefix: str = Field(default="", description="Hash prefix partition; empty = everything.")
    sample: float = Field(default=1.0, gt=0, le=1,
                          description="Share of each store's copies to read, a random slice "
                                      "of the hash space (1 = every copy).")
    limit: int = Field(default=0, ge=0, description="Copies to check per store; 0 = no limit.")


@dg.op(description="Re-verify copies at rest; mark missing and corrupt ones (a corrupt object "
                   "in a local store is set aside into quarantine/) so the director copies "
                   "them again.")
def scrub_op(context: dg.OpExecutionContext, config: ScrubConfig,
             replication: ReplicationResource) -> dg.Output[int]:
    setup = replication.open()
    plans = plan_scrubs(setup.catalog, setup.replicas, [config.store] if config.store else None,
                        prefix=config.prefix or None,
                        sample=config.sample if config.sample < 1 else None)
    reports = run_scrubs(setup.catalog, setup.replicas, plans, width=setup.policy.copier_width,
                         limit=config.limit or None)
    for report in reports:
        for line in report.problems:
            context.log.warning(line)
    errors = [report.error for report in reports if report.error]
    if errors:
        raise dg.Failure("; ".join(errors))
    bad = sum(report.bad for report in reports)
    return dg.Output(bad, metadata={
        "checked": sum(r.checked for r in reports),
        "corrupted": sum(r.corrupted for r in reports),
        "missing": sum(r.missing for r in reports),
        "set_aside": sum(r.set_aside for r in reports),
        "bytes_checked": sum(r.bytes_checked for r in reports),
        **{f"objects_per_second_{r.store}": round(r.objects_per_second, 1) for r in reports}})


@dg.job(description="Scrub: periodic integrity check of stored copies (seed 004: archival-"
                    "time checks do not replace periodic ones).")
def scrub_job() -> None:
    scrub_op()
