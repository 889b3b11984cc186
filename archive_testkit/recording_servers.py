"""Loopback servers that record what reached them, for tests of what the crawler sends where.

- `RecordingSite`: serves fixed pages and records each request's path and headers (did an
  `Authorization` header arrive?).
- `ConnectionCounter`: accepts TCP connections, counts them and closes them (did anything
  connect at all?).

Both run in threads, apart from the event loop of the crawler under test, so what they
record does not depend on that loop giving them a turn.
"""

from __future__ import annotations

import select
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import NamedTuple, Self


class Page(NamedTuple):
    body: bytes = b""
    status: int = 200
    headers: tuple[tuple[str, str], ...] = (("Content-Type", "text/html; charset=utf-8"),)


class SiteRequest(NamedTuple):
    path_qs: str
    headers: tuple[tuple[str, str], ...]

    def header(self, name: str) -> str | None:
        """The first value of header `name` (any case), or None."""
        return next((v for k, v in self.headers if k.lower() == name.lower()), None)


class RecordingSite:
    """An HTTP server on 127.0.0.1 answering `pages` (path and query -> Page; others 404);
    use as `with RecordingSite(pages) as site:`, then read `site.requests`."""

    def __init__(self, pages: dict[str, Page] | None = None) -> None:
        self.pages = pages if pages is not None else {}
        self._requests: list[SiteRequest] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def requests(self) -> list[SiteRequest]:
        with self._lock:
            return list(self._requests)

    def paths(self) -> set[str]:
        return {request.path_qs for request in self.requests}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        site = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                with site._lock:
                    site._requests.append(SiteRequest(self.path, tuple(self.headers.items())))
                page = site.pages.get(self.path, Page(b"not here", 404))
                self.send_response(page.status)
                for name, value in page.headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(page.body)))
                self.end_headers()
                self.wfile.write(page.body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        return Handler

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


class ConnectionCounter:
    """A TCP listener on 127.0.0.1 that counts the connections made to it and closes them;
    use as `with ConnectionCounter() as counter:`, then read `counter.connections`."""

    def __init__(self) -> None:
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self._listener.settimeout(0.05)
        self.port = int(self._listener.getsockname()[1])
        self._count = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)

    @property
    def connections(self) -> int:
        """Connections made so far, those still waiting in the backlog included."""
        self._drain()
        return self._count

    def _accept(self) -> None:
        while not self._stop.is_set():
            select.select([self._listener], [], [], 0.05)
            self._drain()

    def _drain(self) -> None:
        """Accept and count what is waiting (the kernel completes a connect before any
        accept, so a connection is in the backlog as soon as the client sees it made)."""
        with self._lock:
            while select.select([self._listener], [], [], 0)[0]:
                try:
                    connection, _ = self._listener.accept()
                except OSError:
                    return
                self._count += 1
                connection.close()

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._listener.close()
