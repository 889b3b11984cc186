"""Misbehaving network endpoints for fault-injection tests: real sockets, no mocks.

- `closed_port_url()`: an address where nobody listens (connection refused at once).
- `SilentServer`: accepts TCP connections and never answers (clients hit their read timeout).
- `FaultyProxy`: an HTTP reverse proxy in front of a real server (moto_server for S3) that
  counts every request and, on demand, answers some of them itself with an S3-style error
  (503 SlowDown, 500 InternalError, 403 AccessDenied ...) instead of forwarding them.
"""

from __future__ import annotations

import http.client
import socket
import threading
from collections.abc import Collection
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Self
from urllib.parse import urlsplit

from archive_pipelines.server_process import free_port

_HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate",
                         "proxy-authorization", "te", "trailers", "transfer-encoding",
                         "upgrade", "expect", "content-length"})


def closed_port_url() -> str:
    """An http:// URL on 127.0.0.1 where nothing listens (a moment ago, at least)."""
    return f"http://127.0.0.1:{free_port()}"


class SilentServer:
    """Accepts connections and keeps them open without reading or answering a byte."""

    def __init__(self) -> None:
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.bind(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self._accepted: list[socket.socket] = []
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self.connections = 0  # accepted so far

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Self:
        self._listener.listen(64)
        self._listener.settimeout(0.05)  # closing a socket does not wake a blocked accept()
        self._thread = threading.Thread(target=self._accept, name="silent-server", daemon=True)
        self._thread.start()
        return self

    def _accept(self) -> None:
        while not self._stopping.is_set():
            try:
                conn, _addr = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:  # the listener was closed: stop
                return
            with self._lock:
                self._accepted.append(conn)
                self.connections += 1

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._listener.close()
        with self._lock:
            for conn in self._accepted:
                conn.close()
            self._accepted.clear()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


@dataclass
class _Fault:
    status: int
    code: str
    remaining: int | None  # None: every matching request
    methods: frozenset[str] | None


@dataclass(frozen=True)
class SeenRequest:
    method: str
    path: str
    status: int  # what the client got back
    injected: bool  # answered by the proxy's fault, not the upstream


class FaultyProxy:
    """A counting reverse proxy to `upstream` (e.g. a moto_server URL) with injected errors."""

    def __init__(self, upstream: str) -> None:
        parts = urlsplit(upstream)
        if parts.scheme != "http" or not parts.hostname or not parts.port:
            raise ValueError(f"upstream must be http://host:port, got {upstream!r}")
        self.upstream = (parts.hostname, parts.port)
        self._lock = threading.Lock()
        self._faults: list[_Fault] = []
        self._seen: list[SeenRequest] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self.port = int(self._server.server_address[1])
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Self:
        self._thread = threading.Thread(target=self._server.serve_forever, name="faulty-proxy",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def fail(self, status: int, code: str, *, times: int | None = None,
             methods: Collection[str] | None = None) -> None:
        """Answer the next `times` requests (every one if None; only these HTTP `methods`, if
        given) with `status` and an S3 error `code`, without forwarding them."""
        with self._lock:
            self._faults.append(_Fault(status, code, times,
                                       frozenset(m.upper() for m in methods) if methods else None))

    def heal(self) -> None:
        """Forward everything again."""
        with self._lock:
            self._faults.clear()

    @property
    def requests(self) -> list[SeenRequest]:
        with self._lock:
            return list(self._seen)

    def reset_counts(self) -> None:
        with self._lock:
            self._seen.clear()

    def _take_fault(self, method: str) -> _Fault | None:
        with self._lock:
            for fault in self._faults:
                if fault.methods is not None and method not in fault.methods:
                    continue
                if fault.remaining is None:
                    return fault
                if fault.remaining > 0:
                    fault.remaining -= 1
                    return fault
            return None

    def _record(self, seen: SeenRequest) -> None:
        with self._lock:
            self._seen.append(seen)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, and 100-continue for big bodies

            def log_message(self, format: str, *args: object) -> None:
                pass  # quiet

            def _body(self) -> bytes:
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    chunks: list[bytes] = []
                    while True:
                        size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                        if size == 0:
                            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                                pass  # trailers
                            return b"".join(chunks)
                        chunks.append(self.rfile.read(size))
                        self.rfile.readline()
                return self.rfile.read(int(self.headers.get("Content-Length") or 0))

            def _handle(self) -> None:
                body = self._body()
                fault = proxy._take_fault(self.command)
                if fault is not None:
                    self._answer_fault(fault)
                    return
                upstream = http.client.HTTPConnection(*proxy.upstream, timeout=60)
                try:
                    headers = {k: v for k, v in self.headers.items()
                               if k.lower() not in _HOP_BY_HOP}
                    upstream.request(self.command, self.path, body=body, headers=headers)
                    response = upstream.getresponse()
                    data = response.read()
                    # Counted before the client can see the answer (tests read counts then).
                    proxy._record(SeenRequest(self.command, self.path, response.status, False))
                    self.send_response(response.status, response.reason)
                    for key, value in response.getheaders():
                        if key.lower() not in _HOP_BY_HOP:
                            self.send_header(key, value)
                    length = (response.getheader("Content-Length") or "0"
                              if self.command == "HEAD" else str(len(data)))
                    self.send_header("Content-Length", length)
                    self.end_headers()
                    if self.command != "HEAD":
                        self.wfile.write(data)
                finally:
                    upstream.close()

            def _answer_fault(self, fault: _Fault) -> None:
                data = (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{fault.code}'
                        f"</Code><Message>injected by the test proxy</Message>"
                        f"<RequestId>faulty-proxy</RequestId></Error>").encode()
                proxy._record(SeenRequest(self.command, self.path, fault.status, True))
                self.send_response(fault.status)
                self.send_header("Content-Type", "application/xml")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _handle

        return Handler
