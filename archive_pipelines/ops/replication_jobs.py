"""Replication jobs: one worker batch, the director (for cron/CI), and scrub."""

from typing import Any

import dagster as dg
from pydantic import Field

from archive_pipelines.replication import (
    RunSummary,
    archive_batch,
    replicate_until_met,
)
from archive_pipelines.replication.scrub_runs import scrub_stores
from archive_pipelines.resources.replication import ReplicationResource


class ArchiveBatchConfig(dg.Config):
    sha256s: list[str] = Field(default_factory=list, description="The batch (from the director).")


def _fail_unless_met(context: dg.OpExecutionContext, run: RunSummary) -> None:
    """Log the per-store summary; a Failure carrying it when the policy was not met."""
    for line in run.report.errors[:20]:
        context.log.warning(line)
    context.log.info(f"{run.copies_made:,} copies made; {run.verdict()}")
    for line in run.store_lines():
        context.log.info(line)
    if not run.policy_met:
        raise dg.Failure(description=run.verdict(), metadata=_metadata(run))


def _metadata(run: RunSummary) -> dict[str, Any]:
    """The run summary as Dagster metadata: counts, per-store tallies as JSON, the text."""
    values = run.metadata()
    metadata = {key: value for key, value in values.items()
                if key not in ("stores", "summary")}
    metadata["stores"] = dg.MetadataValue.json(values["stores"])  # type: ignore[arg-type]
    metadata["summary"] = dg.MetadataValue.text(str(values["summary"]))
    return metadata


@dg.op(description="Copy one batch of blobs until each has replication.retention copies. "
                   "Fails, with a per-store summary, when blobs remain short of the policy.")
def archive_batch_op(context: dg.OpExecutionContext, config: ArchiveBatchConfig,
                     replication: ReplicationResource) -> dg.Output[int]:
    setup = replication.open()
    for store, problem in setup.replicas.problems.items():
        context.log.warning(f"{store}: {problem}")
    policy = setup.policy
    report = archive_batch(setup.catalog, setup.replicas, config.sha256s,
                           retention=policy.retention, max_age=setup.max_age,
                           width=policy.copier_width, raise_on_failure=False)
    run = RunSummary.of_batch(report, tuple(setup.replicas.names.values()))
    _fail_unless_met(context, run)
    return dg.Output(run.copies_made, metadata=_metadata(run))


@dg.job(description="Copy one batch of under-replicated blobs (launched by the director).")
def archive_batch_job() -> None:
    archive_batch_op()


class DirectorConfig(dg.Config):
    max_batches: int = Field(default=100, ge=1, description="Batches to run in this job.")


@dg.op(description="Find under-replicated blobs and bring them to the policy, batch by batch. "
                   "Fails, with a per-store summary, when blobs remain short of the policy "
                   "(a store unreachable, refusing or full); such a store is skipped.")
def archive_director_op(context: dg.OpExecutionContext, config: DirectorConfig,
                        replication: ReplicationResource) -> dg.Output[int]:
    run = replicate_until_met(replication.open(), max_ticks=config.max_batches,
                              on_store_problem=context.log.warning)
    _fail_unless_met(context, run)
    return dg.Output(run.copies_made, metadata=_metadata(run))


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
    run = scrub_stores(setup.catalog, setup.replicas, [config.store] if config.store else None,
                       prefix=config.prefix or None,
                       sample=config.sample if config.sample < 1 else None,
                       width=setup.policy.copier_width, limit=config.limit or None)
    for line in run.log_lines():
        context.log.info(line)
    for report in run.reports:
        for line in report.problems:
            context.log.warning(line)
    if run.errors:
        raise dg.Failure("; ".join(run.errors))
    return dg.Output(run.bad, metadata=run.as_metadata())


@dg.job(description="Read stored copies back and check their bytes: a copy found missing or "
                    "corrupt is marked so (a corrupt one set aside) and copied again by the "
                    "next replication pass. Same code as `archive-pipelines scrub`.")
def scrub_job() -> None:
    scrub_op()
