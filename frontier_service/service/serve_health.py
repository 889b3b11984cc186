"""`frontier-service serve`'s health and metrics endpoint: the crawls it runs, their figures.

`/healthz`: JSON naming this crawler and each crawl it runs (crawl id, process, pages, in
flight), 200 while it serves and 503 with `"status": "draining"` once it stops. `/metrics`:
the Prometheus text of its crawls' processes together (their last snapshots, as a `run
--processes N` parent serves its children's), plus `frontier_serve_crawls_running` and
`frontier_serve_crawls_ended_total`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass

from aiohttp import web

from frontier_service.metrics import CrawlMetrics, combine_metrics, render_prometheus
from frontier_service.service.health import EndpointServer


@dataclass(frozen=True)
class ServedCrawl:
    """What /healthz says of one crawl this crawler runs."""

    crawl_id: str
    pid: int | None
    joined: bool  # another machine's crawler owns the request; this one helps
    metrics: CrawlMetrics | None  # its process's last snapshot (None before the first)

    def as_json(self) -> dict[str, object]:
        m = self.metrics or CrawlMetrics()
        return {"crawl_id": self.crawl_id, "pid": self.pid, "joined": self.joined,
                "pages": m.pages, "pages_ok": m.pages_ok, "in_flight": m.in_flight,
                "errors": m.fetch_errors, "stopping": m.stopping}


@dataclass(frozen=True)
class ServeState:
    """A snapshot of the serving crawler, taken when an endpoint is asked."""

    worker: str
    stopping: bool
    crawls: list[ServedCrawl]
    ended: int  # crawls this crawler ended (finished or failed) since it started


class ServeHealthServer(EndpointServer):
    """`serve`'s endpoint, beside it; `state` is asked at each request."""

    def __init__(self, state: Callable[[], ServeState], *, host: str = "127.0.0.1",
                 port: int = 0) -> None:
        super().__init__(host=host, port=port)
        self.state = state
        self.started_at = time.time()

    async def _healthz(self, request: web.Request) -> web.Response:
        state = self.state()
        body = {"status": "draining" if state.stopping else "ok", "worker": state.worker,
                "uptime_s": round(time.time() - self.started_at, 1),
                "crawls_running": len(state.crawls), "crawls_ended": state.ended,
                "crawls": [crawl.as_json() for crawl in state.crawls]}
        return web.Response(text=json.dumps(body) + "\n", content_type="application/json",
                            status=503 if state.stopping else 200)

    async def _metrics(self, request: web.Request) -> web.Response:
        state = self.state()
        combined = combine_metrics([c.metrics for c in state.crawls if c.metrics is not None])
        combined.started_at = self.started_at
        combined.stopping = state.stopping
        text = render_prometheus(combined) + "\n".join([
            "# HELP frontier_serve_crawls_running Crawls this crawler runs now.",
            "# TYPE frontier_serve_crawls_running gauge",
            f"frontier_serve_crawls_running {len(state.crawls)}",
            "# HELP frontier_serve_crawls_ended_total Crawls this crawler ended "
            "(finished or failed).",
            "# TYPE frontier_serve_crawls_ended_total counter",
            f"frontier_serve_crawls_ended_total {state.ended}"]) + "\n"
        return web.Response(text=text, content_type="text/plain", charset="utf-8",
                            headers={"X-Content-Format": "prometheus-0.0.4"})
