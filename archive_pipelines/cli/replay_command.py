"""`replay`: serve the archive Wayback-style, with a CDX server and Memento."""

from __future__ import annotations

import asyncio
import signal

import click

from archive_pipelines.cli.context import CliContext


@click.command("replay")
@click.option("--host", default=None, metavar="ADDRESS",
              help="Listen on ADDRESS (default: replay.host, 127.0.0.1).")
@click.option("--port", default=None, type=click.IntRange(0, 65535), metavar="PORT",
              help="Listen on PORT (default: replay.port, 8080; 0 picks a free one).")
@click.option("--no-banner", is_flag=True, help="Replay pages without the archive's banner.")
@click.pass_obj
def replay_command(obj: CliContext, host: str | None, port: int | None, *,
                   no_banner: bool) -> None:
    """Serve archived pages as they were, at /web/<timestamp>/<url>, until interrupted.

    Also: /web/*/<url> (every capture of a URL; <url>* for a prefix), Memento TimeGates and
    TimeMaps (/timemap/link/<url>), a CDX server (/cdx, /cdx/search/cdx), /healthz and
    /metrics. Nothing is fetched from the live web. Stop it with Ctrl-C or SIGTERM."""
    from archive_pipelines.archive_error import CatalogError, SettingsError
    from archive_pipelines.blobstore import open_store
    from archive_pipelines.catalog import head_revision
    from archive_pipelines.replay.exclusions import BadExclusion, Exclusions
    from archive_pipelines.replay.server import ReplayServer, build_replayer

    settings = obj.settings
    replay = settings.replay
    if no_banner:
        replay = replay.model_copy(update={"banner": False})
    if obj.catalog.schema_revision() != head_revision():
        raise CatalogError("the catalog's schema is older than this version's: run "
                           "`archive-pipelines init` to migrate it, then replay")
    try:
        withdrawn = Exclusions(replay.exclusions)
    except BadExclusion as exc:
        raise SettingsError(f"replay.exclusions: {exc}") from None
    replayer = build_replayer(replay, catalog=obj.catalog,
                              store=open_store(settings.primary_store, settings.data_dir),
                              data_dir=settings.data_dir, withdrawn=withdrawn)
    server = ReplayServer(replayer, host=host or replay.host,
                          port=replay.port if port is None else port,
                          keepalive_s=replay.keepalive_seconds)

    async def run() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        await server.start()
        click.echo(f"replaying the archive at {server.url}/web/<timestamp>/<url> "
                   "(Ctrl-C stops)")
        try:
            await stop.wait()
        finally:
            await server.stop()

    asyncio.run(run())
