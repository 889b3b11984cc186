"""`python -m archive_testkit.testweb`: serve the test web until SIGTERM or Ctrl-C."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import os
import signal
import sys
from collections.abc import Sequence

from archive_testkit.testweb.config import TestWebConfig
from archive_testkit.testweb.server import TestWeb

_DEFAULTS = TestWebConfig()


def build_parser() -> argparse.ArgumentParser:
    """One --flag per TestWebConfig field (e.g. --hosts, --latency-ms), plus where to listen."""
    parser = argparse.ArgumentParser(
        prog="python -m archive_testkit.testweb",
        description="Serve a deterministic web of many virtual hosts (chosen by the Host "
        "header) for crawler tests and benchmarks. Prints one JSON line with the bound "
        "port on stdout, then serves until SIGTERM or Ctrl-C.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--bind", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=8080, help="port to listen on (0: any free)")
    parser.add_argument("--log", default=None, help="append every request to this JSON-lines file")
    for field in dataclasses.fields(TestWebConfig):
        default = getattr(_DEFAULTS, field.name)
        parser.add_argument(
            "--" + field.name.replace("_", "-"),
            dest=field.name,
            type=type(default),
            default=default,
            help=field.metadata.get("help", field.name),
        )
    return parser


def config_to_args(config: TestWebConfig) -> list[str]:
    """CLI flags that reproduce `config` (only the fields that differ from the defaults)."""
    args: list[str] = []
    for field in dataclasses.fields(TestWebConfig):
        value = getattr(config, field.name)
        if value != getattr(_DEFAULTS, field.name):
            args += ["--" + field.name.replace("_", "-"), str(value)]
    return args


def main(argv: Sequence[str] | None = None) -> int:
    options = build_parser().parse_args(argv)
    config = TestWebConfig(
        **{field.name: getattr(options, field.name) for field in dataclasses.fields(TestWebConfig)}
    )
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(config, options.bind, options.port, log=options.log))
    return 0


async def _serve(config: TestWebConfig, bind: str, port: int, *, log: str | None) -> None:
    web = TestWeb(config, log_path=log, keep_log=False)  # nobody reads memory in this process
    bound = await web.start(bind, port)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    ready = {"port": bound, "url": f"http://{bind}:{bound}", "pid": os.getpid(),
             "hosts": config.hosts, "seed": config.seed}
    print(json.dumps(ready), flush=True)
    try:
        await stop.wait()
    finally:
        await web.stop()
        print(f"testweb: served {web.log.total} requests", file=sys.stderr, flush=True)
