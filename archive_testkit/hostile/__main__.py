"""`python -m archive_testkit.hostile --port 0`: serve the hostile site until SIGTERM or Ctrl-C."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
from collections.abc import Sequence

from archive_testkit.hostile.server import HostileConfig, HostileSite


def main(argv: Sequence[str] | None = None) -> int:
    defaults = HostileConfig()
    parser = argparse.ArgumentParser(
        prog="python -m archive_testkit.hostile",
        description="Serve the hostile site (compression bombs, trickles, resets, traps ...; "
                    "routes in archive_testkit.hostile). Prints one JSON line with the port.")
    parser.add_argument("--bind", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--log", default=None, help="append every request to this JSON-lines file")
    parser.add_argument("--bomb-bytes", type=int, default=defaults.bomb_bytes)
    parser.add_argument("--bombs-per-kind", type=int, default=defaults.bombs_per_kind)
    parser.add_argument("--trickle-interval", type=float, default=defaults.trickle_interval_s)
    parser.add_argument("--css-kb", type=int, default=defaults.css_kb)
    options = parser.parse_args(argv)
    config = HostileConfig(bomb_bytes=options.bomb_bytes, bombs_per_kind=options.bombs_per_kind,
                           trickle_interval_s=options.trickle_interval, css_kb=options.css_kb)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(config, options.bind, options.port, log=options.log))
    return 0


async def _serve(config: HostileConfig, bind: str, port: int, *, log: str | None) -> None:
    site = HostileSite(config, log_path=log)
    site.prepare_bombs()
    bound = await site.start(bind, port)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    print(json.dumps({"port": bound, "url": f"http://{bind}:{bound}", "pid": os.getpid()}),
          flush=True)
    try:
        await stop.wait()
    finally:
        await site.stop()


if __name__ == "__main__":
    sys.exit(main())
