"""A small site of known shape on loopback: "/" links to `/a0`..`/a{wide-1}`, each of those
to `/aN/b0`..`/aN/b{deep-1}`, each of those to three `/aN/bM/cK` pages; "/" and every
`/aN` also link to one URL longer than the frontier takes. The counts a crawl of it must
report (pages, URLs left, drops by reason) follow from its shape."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from archive_pipelines.canonical_urls import MAX_URL_BYTES

HOST = "tree.test"
LONG_PATH = "/long?q=" + "x" * (MAX_URL_BYTES + 500)
C_LINKS = 3  # links of each /aN/bM page, one level below it


@dataclass(frozen=True)
class TreeSite:
    port: int
    wide: int
    deep: int

    def pages_to_depth(self, depth: int) -> int:
        """Pages a crawl from "/" fetches with this --max-depth."""
        levels = [1, self.wide, self.wide * self.deep, self.wide * self.deep * C_LINKS]
        return sum(levels[:depth + 1])


def _page(links: list[str]) -> bytes:
    anchors = "".join(f'<a href="{href}">{href[:20]}</a>\n' for href in links)
    return f"<!doctype html><html><body><p>tree</p>{anchors}</body></html>".encode()


def _links(path: str, site: TreeSite) -> list[str] | None:
    parts = [p for p in path.split("?")[0].split("/") if p]
    if not parts:
        return [f"/a{i}" for i in range(site.wide)] + [LONG_PATH]
    if len(parts) == 1:
        return [f"/{parts[0]}/b{i}" for i in range(site.deep)] + [LONG_PATH]
    if len(parts) == 2:
        return [f"/{parts[0]}/{parts[1]}/c{i}" for i in range(C_LINKS)]
    if len(parts) == 3:
        return []
    return None


@contextlib.contextmanager
def serve_tree(*, wide: int, deep: int) -> Iterator[TreeSite]:
    """Serve the site on a free port of 127.0.0.1 (any Host header) until the block ends."""
    holder: list[TreeSite] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            links = None if self.path == "/robots.txt" else _links(self.path, holder[0])
            body = b"not found" if links is None else _page(links)
            self.send_response(404 if links is None else 200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    holder.append(TreeSite(server.server_address[1], wide, deep))
    thread = threading.Thread(target=server.serve_forever, name="tree-site", daemon=True)
    thread.start()
    try:
        yield holder[0]
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
