"""TestWeb: the aiohttp server that carries out `routes.resolve` for many virtual hosts."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections import Counter
from pathlib import Path

from aiohttp import web

from archive_pipelines.http_site import listen
from archive_testkit.testweb.config import TestWebConfig, host_name, normalize_host
from archive_testkit.testweb.render import render_page
from archive_testkit.testweb.requestlog import RequestLog, RequestRecord
from archive_testkit.testweb.revisions import not_modified, not_modified_reply, revised
from archive_testkit.testweb.routes import Action, Reply, resolve

_STREAM_CHUNK = (b"<p>" + b"all work and no play makes a huge page " * 1600 + b"</p>\n")[:65536]
_MAX_REQUEST_LINE = 64 * 1024  # the graph links one 10 KB URL; aiohttp's default is 8 KB
_FLUSH_EVERY_S = 1.0


class TestWeb:
    """Many deterministic virtual hosts on one loopback port, chosen by the Host header.

    Args:
        config: shape of the web; defaults to TestWebConfig().
        log_path: also append every request to this JSON-lines file.
        keep_log: keep the request log in memory (turn off for multi-million-page runs).
    """

    __test__ = False  # not a pytest test class, despite the name

    def __init__(
        self,
        config: TestWebConfig | None = None,
        *,
        log_path: Path | str | None = None,
        keep_log: bool = True,
    ) -> None:
        self.config = config or TestWebConfig()
        self.log = RequestLog(log_path, keep_in_memory=keep_log)
        self._port: int | None = None
        self._render = functools.lru_cache(maxsize=self.config.cache_pages)(render_page)
        self._latency_s = self.config.latency_ms / 1000
        self._runner: web.ServerRunner | None = None
        self._stopping: asyncio.Event | None = None
        self._flusher: asyncio.Task[None] | None = None

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> int:
        """Listen on (host, port); returns the bound port (useful with port=0)."""
        if self._runner is not None:
            raise RuntimeError("TestWeb already started")
        self._stopping = asyncio.Event()
        if self.config.hosts > 0:  # build the seed's text pools now, not on the first request
            self._render(self.config, host_name(self.config, 0), "/")
        server = web.Server(
            self._handle,
            access_log=None,
            max_line_size=_MAX_REQUEST_LINE,
            max_field_size=_MAX_REQUEST_LINE,
        )
        runner = web.ServerRunner(server, shutdown_timeout=1.0)
        self._port = await listen(runner, host, port, backlog=1024, reuse_address=True)
        self._runner = runner
        self._flusher = asyncio.create_task(self._flush_periodically())
        return self._port

    async def stop(self) -> None:
        """Stop listening, end slow and endless responses, flush and close the log file."""
        if self._stopping is not None:
            self._stopping.set()
        if self._flusher is not None:
            self._flusher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._flusher
            self._flusher = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        self.log.close()

    @property
    def port(self) -> int:
        """The bound port; RuntimeError before start()."""
        if self._port is None:
            raise RuntimeError("TestWeb not started")
        return self._port

    @property
    def base_url(self) -> str:
        """http://127.0.0.1:PORT of the running server."""
        return f"http://127.0.0.1:{self.port}"

    def requests_for(self, host: str) -> list[RequestRecord]:
        return self.log.requests_for(host)

    def fetch_counts(self) -> Counter[tuple[str, str]]:
        return self.log.fetch_counts()

    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        arrived = time.monotonic()
        host = normalize_host(request.headers.get("Host", ""))
        reply = revised(self.config, host, request.path,
                        resolve(self.config, host, request.path, render=self._render))
        if_none_match = request.headers.get("If-None-Match")
        if_modified_since = request.headers.get("If-Modified-Since")
        conditional = if_none_match is not None or if_modified_since is not None
        if conditional and not_modified(reply, if_none_match, if_modified_since):
            reply = not_modified_reply(reply)
        raw_path = request.raw_path
        if not raw_path.startswith("/"):  # absolute form: a browser using the web as its proxy
            raw_path = request.rel_url.raw_path_qs
        self.log.record(RequestRecord(arrived, host, raw_path, reply.status, conditional))
        if reply.action is Action.CLOSE:
            if request.transport is not None:
                request.transport.close()
            return web.Response(status=503)  # never reaches the client
        wait = self._latency_s + reply.delay_s
        if wait > 0 and await self._interrupted(wait):
            return web.Response(status=503, text="test web stopping\n")
        if reply.action is Action.STREAM:
            return await self._stream(request, reply)
        if reply.status == 304:
            return web.Response(status=304, headers=dict(reply.headers))
        headers = {"Content-Type": reply.content_type, **dict(reply.headers)}
        return web.Response(status=reply.status, body=reply.body, headers=headers)

    async def _interrupted(self, wait: float) -> bool:
        """Sleep `wait` seconds; True if the server began stopping meanwhile."""
        assert self._stopping is not None
        if wait < 0.05:  # short latencies: a plain sleep is cheaper than a timer on the event
            await asyncio.sleep(wait)
            return self._stopping.is_set()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stopping.wait(), wait)
        return self._stopping.is_set()

    async def _stream(self, request: web.BaseRequest, reply: Reply) -> web.StreamResponse:
        assert self._stopping is not None
        response = web.StreamResponse(
            status=reply.status, headers={"Content-Type": reply.content_type}
        )
        response.enable_chunked_encoding()
        await response.prepare(request)
        remaining = reply.stream_bytes
        try:
            while remaining > 0 and not self._stopping.is_set():
                piece = _STREAM_CHUNK[:remaining]
                await response.write(piece)
                remaining -= len(piece)
            await response.write_eof()
        except ConnectionError:
            pass  # the client stopped reading: the usual end of a /huge/ download
        return response

    async def _flush_periodically(self) -> None:
        while True:
            await asyncio.sleep(_FLUSH_EVERY_S)
            self.log.flush()
