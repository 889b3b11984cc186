"""`CuttableTcpProxy`: a TCP forwarder to a real server that a test can cut and restore.

Cut, the port refuses connections and every open one is closed: to a client the server has
stopped. Restored, the same port forwards again to the same upstream, whose state (a
moto_server's buckets, which live in its memory) survived: "the endpoint came back".
"""

from __future__ import annotations

import contextlib
import socket
import threading
from types import TracebackType
from typing import Self
from urllib.parse import urlsplit


class CuttableTcpProxy:
    """Forwards 127.0.0.1:`port` to `upstream` (http://host:port) until `cut()`."""

    def __init__(self, upstream: str) -> None:
        parts = urlsplit(upstream)
        if not parts.hostname or not parts.port:
            raise ValueError(f"upstream must be scheme://host:port, got {upstream!r}")
        self.upstream = (parts.hostname, parts.port)
        self.port = 0
        self.connections = 0  # accepted so far
        self._lock = threading.Lock()
        self._listener: socket.socket | None = None
        self._open: set[socket.socket] = set()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Self:
        """Listen (on the port it had, after a cut) and forward."""
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(128)
        self.port = int(listener.getsockname()[1])
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), name="tcp-cut-accept",
                         daemon=True).start()
        return self

    def cut(self) -> None:
        """Stop listening and close every open connection: the endpoint is gone."""
        with self._lock:
            listener, self._listener = self._listener, None
            sockets, self._open = self._open, set()
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)  # wakes the accept()
            listener.close()
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def restore(self) -> Self:
        """Forward again, on the same port."""
        return self.start()

    def stop(self) -> None:
        self.cut()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _addr = listener.accept()
            except OSError:  # cut: the listener was closed
                return
            try:
                server = socket.create_connection(self.upstream, timeout=5)
                server.settimeout(None)
            except OSError:
                client.close()
                continue
            with self._lock:
                if self._listener is not listener:  # cut meanwhile
                    client.close()
                    server.close()
                    return
                self.connections += 1
                self._open.update((client, server))
            for source, target in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(source, target),
                                 name="tcp-cut-pump", daemon=True).start()

    def _pump(self, source: socket.socket, target: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                target.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, target):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
            with self._lock:
                self._open.discard(source)
            source.close()  # the other direction's pump closes `target`
