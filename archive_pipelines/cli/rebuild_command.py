"""`rebuild-views`: regenerate the symlink views from the catalog."""

from __future__ import annotations

import time

import click

from archive_pipelines.cli.context import CliContext
from archive_pipelines.cli.progress_bar import progress_bar
from archive_pipelines.cli.storage_output import VIEW_CHOICE
from archive_pipelines.storage.view_rebuild import rebuild_views


@click.command("rebuild-views")
@click.option("--clean", is_flag=True, help="Remove the views' links first.")
@click.option("--view", "views", multiple=True, type=VIEW_CHOICE, help="Only these views.")
@click.pass_obj
def rebuild_views_command(obj: CliContext, *, clean: bool, views: tuple[str, ...]) -> None:
    """Regenerate the symlink views from the catalog.

    An S3 primary has no symlink views (they link into a local store): the command says so
    and does nothing, and fails when --view asks for one."""
    settings = obj.settings
    if not settings.primary_is_local:
        where = settings.store_location(settings.primary_store)
        message = (f"no symlink views: the primary store is in S3 ({where}); browse through "
                   "`archive-pipelines replay`")
        if views:
            raise click.UsageError(f"--view {', '.join(views)}: {message}")
        click.echo(f"{message}. Nothing to rebuild.")
        return
    started = time.monotonic()
    with progress_bar("rebuild", "link") as bar:
        parts = obj.parts(views)  # closed (worker processes stopped) when the command ends
        report = rebuild_views(parts.catalog, parts.primary, parts.views,
                               work=parts.work, clean=clean, progress=bar.update)
    click.echo(f"{report.snapshots:,} snapshots, {report.links:,} links "
               f"({report.links_created:,} created, {report.links_fixed:,} fixed, "
               f"{report.links_removed:,} removed) in {time.monotonic() - started:.1f}s")
    if report.link_conflicts:
        click.echo(f"{report.link_conflicts:,} link path(s) blocked by real files (left alone)")
