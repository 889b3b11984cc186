"""An aiohttp runner listening on a TCP port: the replay server's, the crawler's health
endpoint's and the test web's way to start."""

from __future__ import annotations

from aiohttp import web


async def listen(runner: web.BaseRunner, host: str, port: int, *, backlog: int = 128,
                 reuse_address: bool | None = None) -> int:
    """Set `runner` up and listen on (host, port); the bound port (port 0 picks a free one).

    When the port cannot be bound the runner is cleaned up and the OSError raised."""
    await runner.setup()
    site = web.TCPSite(runner, host, port, backlog=backlog, reuse_address=reuse_address)
    try:
        await site.start()
    except OSError:
        await runner.cleanup()
        raise
    return int(runner.addresses[0][1])
