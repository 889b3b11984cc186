"""`captures qa`: check a URL's browser capture against its replay, now."""

from __future__ import annotations

import hashlib

import click

from archive_pipelines.archive_error import ArchiveError, NotFound
from archive_pipelines.cli.context import CliContext


@click.command("captures qa")
@click.argument("url")
@click.option("--at", "at", metavar="TIMESTAMP",
              help="The browser capture nearest this time (YYYYMMDDhhmmss or a leading part, "
                   "unix seconds or ISO 8601); default: the newest.")
@click.option("--replay-url", metavar="URL",
              help="Check against this running replay server (default: qa.replay_url, else one "
                   "started for the check on a free loopback port).")
@click.pass_obj
def captures_qa_command(obj: CliContext, url: str, *, at: str | None,
                        replay_url: str | None) -> None:
    """Check a browser capture of URL against its replay: screenshots and resources.

    Loads the capture's replay in headless Chromium (nothing leaves the replay server), and
    prints the pixel score of the two full-page screenshots, the page's resources the replay
    answered from the archive out of those answered at capture time (the missing ones
    listed), requests that tried to leave the replay server, and the overall score (the lower
    of the pixel score and the share replayed; 0 with any leak). The check is recorded: the
    score then shows in `captures URL`. Exit 1 if URL has no browser capture, or if its
    capture-time screenshot is missing from the store or damaged (the check is recorded,
    score 0, with the reason); exit 2, nothing recorded, if the store fails (unreachable)."""
    from archive_pipelines.blobstore import open_store
    from archive_pipelines.canonical_urls import try_canonical_url_and_domain
    from archive_pipelines.captures.lookup import when_ms
    from archive_pipelines.qa.capture_check import ScreenshotUnreadable
    from archive_pipelines.qa.sampling import check_with_settings

    settings = obj.settings
    catalog = obj.catalog
    parsed = try_canonical_url_and_domain(url.strip())
    if parsed is None:
        raise ArchiveError(f"{url[:200]!r} is not an http(s) URL")
    pages = catalog.qa.browser_pages_of_url(hashlib.sha256(parsed[0].encode()).hexdigest())
    if not pages:
        raise NotFound(f"{parsed[0]} has no browser capture (a page loaded in the browser "
                           "with its screenshot): nothing to check; crawl it with --browser")
    if at is None:
        page = pages[-1]
    else:
        moment = when_ms(at)
        page = min(pages, key=lambda p: (abs(p.fetched_ms - moment), -p.fetched_ms))
    checked = check_with_settings([page.id], catalog=catalog,
                                  store=open_store(settings.primary_store, settings.data_dir),
                                  settings=settings, replay_url=replay_url)
    check, unreadable = checked[0].check, checked[0].unreadable
    from archive_pipelines.replay.timestamps import timestamp_of

    pixel = "-" if check.pixel_score is None else f"{check.pixel_score:.4f}"
    click.echo(f"{page.url} captured at {timestamp_of(page.fetched_ms)} (capture {page.id})")
    click.echo(f"  score      {check.score:.4f}"
               + ("  (under the threshold " f"{settings.qa.threshold:g})"
                  if check.score < settings.qa.threshold else ""))
    click.echo(f"  pixels     {pixel}")
    click.echo(f"  resources  {check.resources_replayed}/{check.resources_expected} replayed "
               "from the archive")
    click.echo(f"  leaks      {check.leaks}")
    if check.error:
        click.echo(f"  problem    {check.error}")
    for missing in check.missing:
        click.echo(f"  missing    {missing}")
    if unreadable is not None:
        raise ScreenshotUnreadable(f"capture {page.id} of {page.url} compared with nothing: "
                                   f"{unreadable} (run `archive-pipelines verify`)")
