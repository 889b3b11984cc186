"""The health and metrics endpoint: `/healthz` and Prometheus-text `/metrics` on 127.0.0.1."""

from __future__ import annotations

import json

from aiohttp import web

from archive_pipelines.http_site import listen
from frontier_service.metrics import CrawlMetrics, render_prometheus
from frontier_service.service.process_gauges import sample_process


class EndpointServer:
    """A tiny aiohttp app of `/healthz` and `/metrics` (a subclass's `_healthz`, `_metrics`);
    `port` 0 picks a free one."""

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.host = host
        self.requested_port = port
        self.port = 0
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def start(self) -> int:
        app = web.Application()
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/metrics", self._metrics)
        runner = web.AppRunner(app, access_log=None)
        self.port = await listen(runner, self.host, self.requested_port)
        self._runner = runner
        return self.port

    async def stop(self) -> None:
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()

    async def _healthz(self, request: web.Request) -> web.Response:
        raise NotImplementedError

    async def _metrics(self, request: web.Request) -> web.Response:
        raise NotImplementedError


class HealthServer(EndpointServer):
    """The crawler's (`run`) endpoint, beside it."""

    def __init__(self, metrics: CrawlMetrics, *, host: str = "127.0.0.1", port: int = 0,
                 sample_process: bool = True) -> None:
        super().__init__(host=host, port=port)
        self.metrics = metrics
        # False for a supervisor, whose metrics are its children's (their last snapshots).
        self.sample_process = sample_process

    async def _healthz(self, request: web.Request) -> web.Response:
        m = self.metrics
        body = {"status": "draining" if m.stopping else "ok", "uptime_s": round(m.uptime_s(), 1),
                "pages": m.pages, "in_flight": m.in_flight, "errors": m.fetch_errors,
                "browser": {"pages": m.browser_pages, "failures": m.browser_failures,
                            "restarts": m.browser_restarts}}
        return web.Response(text=json.dumps(body) + "\n", content_type="application/json",
                            status=503 if m.stopping else 200)

    async def _metrics(self, request: web.Request) -> web.Response:
        if self.sample_process:
            sample_process(self.metrics)
        return web.Response(text=render_prometheus(self.metrics),
                            content_type="text/plain", charset="utf-8",
                            headers={"X-Content-Format": "prometheus-0.0.4"})
