"""`crawls`: the crawl definitions of archive.toml, and the crawls queued of them."""

from __future__ import annotations

import getpass
import json
import socket
from datetime import datetime
from typing import Any

import click

from archive_pipelines.archive_error import ArchiveError, NotFound
from archive_pipelines.catalog import CrawlRequest
from archive_pipelines.cli.context import CliContext
from archive_pipelines.cli.option_types import COUNT


@click.group("crawls")
def crawls_command() -> None:
    """List the crawl definitions ([[crawls]] in archive.toml) and their crawls, queue one,
    or show one."""


@crawls_command.command("list")
@click.option("--name", "definition", metavar="NAME", help="Only the crawls of definition NAME.")
@click.option("--limit", type=COUNT, default=20, show_default=True, help="At most N crawls.")
@click.option("--json", "as_json", is_flag=True, help="Print definitions and crawls as JSON.")
@click.pass_obj
def list_command(obj: CliContext, definition: str | None, *, limit: int, as_json: bool) -> None:
    """The definitions (name, cadence, seeds) and the latest crawls, newest first."""
    from archive_pipelines.crawls.reports import crawl_figures
    from archive_pipelines.crawls.requests import list_crawls

    definitions = obj.settings.crawl_definitions
    requests = list_crawls(obj.catalog, name=definition, limit=limit)
    if as_json:
        click.echo(json.dumps({"definitions": [d.as_dict() for d in definitions],
                               "crawls": [_request_json(r) for r in requests]}, indent=2))
        return
    if not definitions:
        click.echo("no crawl definitions: add [[crawls]] tables to "
                   f"{obj.settings.data_dir / 'archive.toml'}")
    for found in definitions:
        click.echo(f"{found.name:<24} {found.cadence or 'by hand':<14} "
                   + " ".join(found.seeds))
    click.echo(f"\n{len(requests)} crawl(s)" + (f" of {definition}" if definition else "")
               + (":" if requests else ""))
    for request in requests:
        figures = crawl_figures(request)
        click.echo(f"{request.crawl_id:<44} {request.state:<9} {_when(request.queued_at)}  "
                   f"{figures.pages:,} pages")


@crawls_command.command("queue")
@click.argument("name")
@click.pass_obj
def queue_command(obj: CliContext, name: str) -> None:
    """Queue one crawl of definition NAME for the crawler (`frontier-service serve`)."""
    from archive_pipelines.crawls.reports import where_it_stands
    from archive_pipelines.crawls.requests import crawler_presence, queue_crawl

    settings = obj.settings
    try:
        definition = settings.crawl_definition(name)
    except KeyError:
        known = ", ".join(d.name for d in settings.crawl_definitions) or "none"
        raise ArchiveError(f"no crawl definition is named {name!r} in "
                           f"{settings.data_dir / 'archive.toml'} (defined: {known})") from None
    request = queue_crawl(obj.catalog, definition.as_dict(), name=name,
                          requested_by=f"command line ({getpass.getuser()}@{socket.gethostname()})")
    click.echo(f"queued crawl {request.crawl_id}")
    click.echo(where_it_stands(request, crawler_presence(obj.catalog)))


@crawls_command.command("show")
@click.argument("crawl_id")
@click.option("--json", "as_json", is_flag=True, help="Print the crawl as JSON.")
@click.pass_obj
def show_command(obj: CliContext, crawl_id: str, *, as_json: bool) -> None:
    """One crawl: its state, figures, times, outcome and definition. Exit 1 if none has
    this crawl_id."""
    from archive_pipelines.crawls.reports import crawl_figures, times, where_it_stands
    from archive_pipelines.crawls.requests import crawler_presence, get_crawl

    request = get_crawl(obj.catalog, crawl_id)
    if request is None:
        raise NotFound(f"no crawl has the crawl_id {crawl_id!r} (`archive-pipelines crawls "
                       "list` lists them)")
    if as_json:
        click.echo(json.dumps(_request_json(request), indent=2))
        return
    click.echo(f"crawl_id      {request.crawl_id}")
    click.echo(f"definition    {request.definition_name}")
    click.echo(f"state         {where_it_stands(request, crawler_presence(obj.catalog))}")
    click.echo(f"requested_by  {request.requested_by}")
    click.echo(f"crawler       {request.claimed_by or '-'} (attempts: {request.attempts})")
    for key, value in times(request).items():
        click.echo(f"{key:<13} {value}")
    for key, figure in crawl_figures(request).as_dict().items():
        click.echo(f"{key:<13} {figure:,}" if isinstance(figure, int) else f"{key:<13} {figure or '-'}")
    click.echo(f"seeds         {' '.join(request.definition.get('seeds', []))}")
    click.echo(f"definition    {json.dumps(request.definition, sort_keys=True)}")


def _when(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def _request_json(request: CrawlRequest) -> dict[str, Any]:
    from archive_pipelines.crawls.reports import crawl_figures, times

    return {"crawl_id": request.crawl_id, "definition_name": request.definition_name,
            "state": request.state, "requested_by": request.requested_by,
            "claimed_by": request.claimed_by, "attempts": request.attempts, **times(request),
            **crawl_figures(request).as_dict(), "progress": request.progress,
            "outcome": request.outcome, "definition": request.definition}
