"""The documentation site as static files, served by Python's threaded `http.server`.

`write_docs_site` writes the same bytes the test web serves for its docs host (absolute
links carry the origin it is given). `python -m archive_testkit.testweb.static_server
--directory DIR --log FILE` serves a directory with `ThreadingHTTPServer` and logs every
request (monotonic arrival time, Host, path, status) as the test web's JSON lines, so
`read_jsonl` reads both; `serve_static_in_subprocess` runs it beside the caller.

By default the handler speaks HTTP/1.0 as `python -m http.server` does: one connection per
request. `--keep-alive` answers HTTP/1.1 on persistent connections, with TCP_NODELAY: the
handler writes headers and body separately, and with Nagle's algorithm the body then waits
for the client's delayed ACK of the headers, ~40 ms a response on loopback.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import Iterator, Sequence
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from archive_testkit.testweb.background import TestWebProcess, spawn_server
from archive_testkit.testweb.config import TestWebConfig, normalize_host
from archive_testkit.testweb.docs_site import docs_paths, docs_robots_txt, render_docs_page
from archive_testkit.testweb.requestlog import RequestLog, RequestRecord


def write_docs_site(directory: Path, config: TestWebConfig, origin: str) -> list[str]:
    """Write every page (`/` as index.html) and robots.txt under `directory`; returns the paths."""
    paths = list(docs_paths(config))
    for path in paths:
        target = directory / ("index.html" if path == "/" else path.lstrip("/"))
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(render_docs_page(config, origin, path))
    (directory / "robots.txt").write_bytes(docs_robots_txt())
    return paths


class LoggingRequestHandler(SimpleHTTPRequestHandler):
    """SimpleHTTPRequestHandler that records each request in the server's log."""

    server: StaticSiteServer
    _arrived = 0.0

    def parse_request(self) -> bool:
        self._arrived = time.monotonic()  # the request line has just been read
        return super().parse_request()

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        status = int(code) if not isinstance(code, str) or code.isdigit() else 0
        host = normalize_host(self.headers.get("Host", "")) if self.headers else ""
        self.server.request_log.record(RequestRecord(self._arrived, host, self.path, status))

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the request log has it; no line per request on stderr


class KeepAliveRequestHandler(LoggingRequestHandler):
    """HTTP/1.1 persistent connections (replies carry Content-Length), without Nagle's delay."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True


class StaticSiteServer(ThreadingHTTPServer):
    """A thread per connection serving `directory`, every request recorded in `request_log`."""

    daemon_threads = True
    request_queue_size = 128  # crawlers open their connections at once

    def __init__(self, address: tuple[str, int], directory: Path, request_log: RequestLog,
                 *, keep_alive: bool = False) -> None:
        self.request_log = request_log
        kind = KeepAliveRequestHandler if keep_alive else LoggingRequestHandler

        def handler(*args: Any) -> LoggingRequestHandler:
            return kind(*args, directory=str(directory))

        super().__init__(address, handler)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m archive_testkit.testweb.static_server",
        description="Serve a directory with http.server's ThreadingHTTPServer, logging every "
        "request as JSON lines. Prints one JSON line with the bound port, then serves until "
        "SIGTERM or Ctrl-C.")
    parser.add_argument("--directory", required=True, help="the directory to serve")
    parser.add_argument("--bind", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=0, help="port to listen on (0: any free)")
    parser.add_argument("--log", default=None, help="append every request to this JSON-lines file")
    parser.add_argument("--keep-alive", action="store_true",
                        help="HTTP/1.1 persistent connections (default: HTTP/1.0, as http.server)")
    options = parser.parse_args(argv)
    log = RequestLog(options.log, keep_in_memory=False)
    server = StaticSiteServer((options.bind, options.port), Path(options.directory), log,
                              keep_alive=options.keep_alive)
    signal.signal(signal.SIGTERM, _exit_cleanly)
    port = server.server_address[1]
    print(json.dumps({"port": port, "url": f"http://{options.bind}:{port}", "pid": os.getpid()}),
          flush=True)
    try:
        with contextlib.suppress(KeyboardInterrupt):
            server.serve_forever(poll_interval=0.1)
    finally:
        server.server_close()
        log.close()
    return 0


def _exit_cleanly(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # leaves serve_forever in the main thread; the log is then closed


@contextlib.contextmanager
def serve_static_in_subprocess(directory: Path, *, log_path: Path | str | None = None,
                               port: int = 0, keep_alive: bool = False) -> Iterator[TestWebProcess]:
    """Serve `directory` from a separate process (its CPU is not the caller's) during the block."""
    command = [sys.executable, "-m", "archive_testkit.testweb.static_server",
               "--directory", str(directory), "--port", str(port)]
    if log_path is not None:
        command += ["--log", str(log_path)]
    if keep_alive:
        command.append("--keep-alive")
    with spawn_server(command, "static server") as running:
        yield running


if __name__ == "__main__":
    sys.exit(main())
