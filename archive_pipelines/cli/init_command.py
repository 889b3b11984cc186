"""`init`: make (or complete) the data dir and bring the catalog's schema to head."""

from __future__ import annotations

import click

from archive_pipelines.blobstore import BlobStoreError, open_store
from archive_pipelines.catalog import redact_url
from archive_pipelines.cli.context import CliContext
from archive_pipelines.datadir import DataDir, initialize
from archive_pipelines.datadir.cluster_profile import ClusterProfile, write_cluster_files
from archive_pipelines.settings import Settings


@click.command("init")
@click.option("--profile", type=click.Choice(["single", "cluster"]), default="single",
              show_default=True,
              help="single: Dagster on SQLite in the data dir, steps in subprocesses. cluster: "
                   "Dagster on PostgreSQL, steps on dagster-celery workers, compute logs on S3 "
                   "(needs --instance-db, --broker, --compute-logs).")
@click.option("--instance-db", metavar="URL", help="cluster: PostgreSQL URL of Dagster's storage.")
@click.option("--broker", metavar="URL", help="cluster: redis:// URL, Celery's broker and backend.")
@click.option("--compute-logs", metavar="S3URL", help="cluster: s3://bucket/prefix for step logs.")
@click.option("--s3-endpoint", metavar="URL", help="cluster: an S3-compatible endpoint (MinIO...).")
@click.option("--max-concurrent-runs", type=int, default=8, show_default=True,
              help="cluster: runs the QueuedRunCoordinator lets run at once.")
@click.option("--visibility-timeout", type=int, default=3600, show_default=True,
              help="cluster: seconds before Redis gives a lost worker's step to another worker "
                   "(longer than the longest step).")
@click.option("--replace", is_flag=True,
              help="cluster: overwrite an existing dagster/dagster.yaml or executor.yaml.")
@click.pass_obj
def init_command(obj: CliContext, *, profile: str, replace: bool, **cluster: str | int | None) -> None:
    """Create the data dir layout, write archive.toml if absent, migrate the catalog.

    O(1) whatever archive/ holds: existing folders are adopted later, lazily.
    """
    settings = obj.unchecked_settings  # the one command that may make the data dir
    cluster_written = _write_cluster_profile(settings, cluster, replace=replace) if (
        profile == "cluster") else None
    report = initialize(settings)
    click.echo(f"data dir      {report.data_dir}")
    click.echo(f"catalog       {redact_url(settings.catalog_url)}")
    schema = (f"{report.schema_before or 'empty'} -> {report.schema_after}"
              if report.schema_before != report.schema_after else f"{report.schema_after} (current)")
    click.echo(f"schema        {schema}")
    primary = settings.primary_store
    if primary.kind == "s3":
        click.echo(f"primary       {settings.store_location(primary)} (S3; no symlink views)")
        _probe_primary(settings)
    if report.created_folders:
        click.echo(f"created       {', '.join(report.created_folders)}")
    if report.wrote_settings:
        click.echo("wrote         archive.toml (defaults)")
    if report.wrote_dagster_yaml:
        click.echo("wrote         dagster/dagster.yaml (DAGSTER_HOME for the embedded default)")
    if cluster_written is not None:
        click.echo("profile       cluster: " + (", ".join(f"wrote dagster/{name}" for name in cluster_written)
                                              or "dagster/ already holds its files"))
    for hint in (report.hint, report.pools_hint):
        if hint:
            click.echo(f"hint          {hint}")


def _write_cluster_profile(settings: Settings, options: dict[str, str | int | None], *,
                           replace: bool) -> list[str]:
    """Check the cluster options and write dagster.yaml and executor.yaml (before `initialize`,
    which keeps a dagster.yaml that exists)."""
    missing = [f"--{name.replace('_', '-')}" for name in ("instance_db", "broker", "compute_logs")
               if not options.get(name)]
    if missing:
        raise click.UsageError(f"--profile cluster needs {', '.join(missing)}")
    profile = ClusterProfile(
        instance_db=str(options["instance_db"]), broker=str(options["broker"]),
        compute_logs=str(options["compute_logs"]),
        s3_endpoint=str(options["s3_endpoint"]) if options.get("s3_endpoint") else None,
        max_concurrent_runs=int(options["max_concurrent_runs"] or 0),
        visibility_timeout=int(options["visibility_timeout"] or 0)).check()
    return write_cluster_files(DataDir(settings.data_dir).dagster_home, profile, replace=replace)


def _probe_primary(settings: Settings) -> None:
    """One request to the S3 primary: a wrong bucket, endpoint or credentials are said now,
    not by the first ingest."""
    from archive_pipelines.blobstore.s3 import S3BlobStore  # boto3 is slow to import

    store = open_store(settings.primary_store, settings.data_dir)
    assert isinstance(store, S3BlobStore)
    try:
        store.probe()
    except BlobStoreError as exc:
        raise click.ClickException(f"the primary store is not usable: {exc}") from None
    click.echo("              reachable, bucket found, credentials accepted")
