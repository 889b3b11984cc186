"""HostileSite: the aiohttp server behind the routes listed in `archive_testkit.hostile`."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web

from archive_testkit.hostile import pages
from archive_testkit.hostile.bombs import ENCODINGS, MIB, bomb, content_encoding
from archive_testkit.testweb.config import normalize_host
from archive_testkit.testweb.requestlog import RequestLog, RequestRecord

_WRITE_BYTES = 64 * 1024
_MAX_COUNT = 1_000_000  # of links, headers, redirects, KiB asked for in a path


@dataclass(frozen=True)
class HostileConfig:
    bomb_bytes: int = 1024 * MIB  # what each bomb inflates to
    bombs_per_kind: int = 4  # links per bomb kind on /bombs/
    trickle_interval_s: float = 1.0  # between two bytes of /trickle/N
    css_kb: int = 2048  # the stylesheet /css/ links


class HostileSite:
    """Serves the hostile routes on one loopback port, whatever the Host header says."""

    def __init__(self, config: HostileConfig | None = None, *,
                 log_path: Path | str | None = None) -> None:
        self.config = config or HostileConfig()
        self.log = RequestLog(log_path)
        self._runner: web.ServerRunner | None = None
        self._port: int | None = None
        self._stopping = asyncio.Event()

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("HostileSite not started")
        return self._port

    def prepare_bombs(self) -> None:
        """Build every bomb now (brotli's takes ~0.5 s a GiB), not on its first request."""
        for kind in ENCODINGS:
            bomb(kind, self.config.bomb_bytes)

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> int:
        server = web.Server(self._handle, access_log=None)
        runner = web.ServerRunner(server, shutdown_timeout=1.0)
        await runner.setup()
        await web.TCPSite(runner, host, port, reuse_address=True).start()
        self._runner = runner
        self._port = int(runner.addresses[0][1])
        return self._port

    async def stop(self) -> None:
        self._stopping.set()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        self.log.close()

    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        host = normalize_host(request.headers.get("Host", ""))
        parts = [part for part in request.path.split("/") if part]
        self.log.record(RequestRecord(time.monotonic(), host, request.raw_path, 0))
        handler = _ROUTES.get(parts[0] if parts else "")
        if handler is None:
            return _html(pages.leaf_page("missing"), status=404)
        try:
            return await handler(self, request, parts[1:], host)
        except (ValueError, IndexError):
            return _html(pages.leaf_page("bad request"), status=404)

    async def _root(self, request: web.BaseRequest, rest: list[str], host: str) -> web.StreamResponse:
        return _html(pages.index_page())

    async def _robots(self, request: web.BaseRequest, rest: list[str],
                      host: str) -> web.StreamResponse:
        return web.Response(body=b"User-agent: *\nAllow: /\n", content_type="text/plain")

    async def _bombs(self, request: web.BaseRequest, rest: list[str],
                     host: str) -> web.StreamResponse:
        per_kind = _count(request.query.get("n", str(self.config.bombs_per_kind)))
        return _html(pages.bombs_page(per_kind))

    async def _bomb(self, request: web.BaseRequest, rest: list[str], host: str) -> web.StreamResponse:
        kind = rest[0].replace("+", ", ")
        if kind not in ENCODINGS:
            raise ValueError(kind)
        data = bomb(kind, self.config.bomb_bytes)
        response = web.StreamResponse(headers={"Content-Type": "text/html; charset=utf-8",
                                               "Content-Encoding": content_encoding(kind)})
        response.content_length = len(data)
        await response.prepare(request)
        view = memoryview(data)
        with contextlib.suppress(ConnectionError):
            for at in range(0, len(data), _WRITE_BYTES):
                if self._stopping.is_set():
                    break
                await response.write(view[at:at + _WRITE_BYTES])
        return response

    async def _trickle(self, request: web.BaseRequest, rest: list[str],
                       host: str) -> web.StreamResponse:
        size = _count(rest[0])
        response = web.StreamResponse(headers={"Content-Type": "text/html"})
        response.content_length = size
        await response.prepare(request)
        with contextlib.suppress(ConnectionError):
            for _ in range(size):
                await response.write(b"x")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stopping.wait(), self.config.trickle_interval_s)
                if self._stopping.is_set():
                    break
        return response

    async def _reset(self, request: web.BaseRequest, rest: list[str], host: str) -> web.StreamResponse:
        """Promise 2N bytes, send N, then reset the connection (RST, not FIN)."""
        size = _count(rest[0])
        response = web.StreamResponse(headers={"Content-Type": "text/html"})
        response.content_length = 2 * size
        await response.prepare(request)
        await response.write(b"<p>" + b"r" * max(0, size - 3))
        transport = request.transport
        if transport is not None:
            sock = transport.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            transport.abort()
        return response

    async def _huge_headers(self, request: web.BaseRequest, rest: list[str],
                            host: str) -> web.StreamResponse:
        value = "h" * (_count(rest[0]) * 1024)
        return _html(pages.leaf_page("huge header"), headers={"X-Huge": value})

    async def _many_headers(self, request: web.BaseRequest, rest: list[str],
                            host: str) -> web.StreamResponse:
        headers = {f"X-Many-{n}": str(n) for n in range(_count(rest[0]))}
        return _html(pages.leaf_page("many headers"), headers=headers)

    async def _redirect(self, request: web.BaseRequest, rest: list[str],
                        host: str) -> web.StreamResponse:
        left = _count(rest[0])
        if left == 0:
            return _html(pages.leaf_page("end of the redirect chain"))
        return web.Response(status=302, headers={"Location": f"/redirect/{left - 1}"})

    async def _redirect_loop(self, request: web.BaseRequest, rest: list[str],
                             host: str) -> web.StreamResponse:
        other = "b" if rest[0] == "a" else "a"
        return web.Response(status=302, headers={"Location": f"/redirect-loop/{other}"})

    async def _odd_encoding(self, request: web.BaseRequest, rest: list[str],
                            host: str) -> web.StreamResponse:
        """Content-Encoding `rest[0]` (`corrupt-gzip`: gzip whose data is broken)."""
        if rest[0] == "corrupt-gzip":
            data = bytearray(bomb("gzip", MIB))
            data[200:240] = b"\xff" * 40
            return _html(bytes(data), headers={"Content-Encoding": "gzip"})
        return _html(b"raw bytes in an unknown coding", headers={"Content-Encoding": rest[0]})

    async def _links(self, request: web.BaseRequest, rest: list[str], host: str) -> web.StreamResponse:
        return _html(pages.links_page(_count(rest[0])))

    async def _page(self, request: web.BaseRequest, rest: list[str], host: str) -> web.StreamResponse:
        return _html(pages.leaf_page("/".join(rest)))

    async def _credentials(self, request: web.BaseRequest, rest: list[str],
                           host: str) -> web.StreamResponse:
        return _html(pages.credentials_page(request.headers.get("Host", host)))

    async def _calendar(self, request: web.BaseRequest, rest: list[str],
                        host: str) -> web.StreamResponse:
        year, month = int(rest[0]), int(rest[1])
        if not 1 <= month <= 12 or not 1 <= year <= 999_999:
            raise ValueError(rest)
        return _html(pages.calendar_page(year, month))

    async def _css(self, request: web.BaseRequest, rest: list[str], host: str) -> web.StreamResponse:
        if not rest:
            return _html(pages.css_page(self.config.css_kb))
        name = rest[-1]
        if name.startswith("huge-") and name.endswith(".css"):
            kb = _count(name.removeprefix("huge-").removesuffix(".css"))
            return web.Response(body=pages.huge_css(kb), content_type="text/css")
        return web.Response(body=b"p { margin: 0 }\n", content_type="text/css")

    async def _asset(self, request: web.BaseRequest, rest: list[str], host: str) -> web.StreamResponse:
        return web.Response(body=b"\x00asset " + "/".join(rest).encode(),
                            content_type="application/octet-stream")


def _html(body: bytes, *, status: int = 200,
          headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(status=status, body=body, headers={
        "Content-Type": "text/html; charset=utf-8", **(headers or {})})


def _count(text: str) -> int:
    value = int(text)
    if not 0 <= value <= _MAX_COUNT:
        raise ValueError(text)
    return value


_Handler = Callable[[HostileSite, web.BaseRequest, list[str], str], Awaitable[web.StreamResponse]]
_ROUTES: dict[str, _Handler] = {
    "": HostileSite._root, "robots.txt": HostileSite._robots, "bombs": HostileSite._bombs,
    "bomb": HostileSite._bomb, "trickle": HostileSite._trickle, "reset": HostileSite._reset,
    "huge-headers": HostileSite._huge_headers, "many-headers": HostileSite._many_headers,
    "redirect": HostileSite._redirect, "redirect-loop": HostileSite._redirect_loop,
    "odd-encoding": HostileSite._odd_encoding, "links": HostileSite._links, "page": HostileSite._page,
    "credentials": HostileSite._credentials, "calendar": HostileSite._calendar,
    "css": HostileSite._css, "img": HostileSite._asset, "fonts": HostileSite._asset,
}
