"""The replay server's counters and gauges, and their Prometheus text exposition."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from archive_pipelines.prometheus_text import field_samples, uptime_samples


@dataclass
class ReplayMetrics:
    """Counters since the process started (`_total`) and gauges."""

    started_at: float = field(default_factory=time.time)
    requests: int = 0
    responses_2xx: int = 0
    responses_3xx: int = 0
    responses_4xx: int = 0
    responses_5xx: int = 0
    mementos: int = 0  # captures replayed (200/206 and recorded redirects)
    body_bytes: int = 0  # body bytes sent
    body_cache_hits: int = 0
    body_cache_misses: int = 0
    header_cache_hits: int = 0
    header_cache_misses: int = 0
    lookup_cache_hits: int = 0
    lookup_cache_misses: int = 0
    missing_bodies: int = 0
    corrupt_bodies: int = 0
    slow_clients_cut: int = 0  # responses abandoned: the client read too slowly
    # Gauges.
    in_flight: int = 0
    body_cache_bytes: int = 0
    header_cache_records: int = 0
    stopping: bool = False

    def uptime_s(self) -> float:
        return max(time.time() - self.started_at, 1e-9)

    def count_status(self, status: int) -> None:
        name = f"responses_{status // 100}xx"
        if hasattr(self, name):
            setattr(self, name, getattr(self, name) + 1)


_GAUGES = frozenset({"in_flight", "body_cache_bytes", "header_cache_records", "stopping"})
_HELP = {
    "requests": "HTTP requests received.",
    "mementos": "Captures replayed (bodies and recorded redirects).",
    "body_bytes": "Body bytes sent.",
    "body_cache_hits": "Bodies served from the memory cache.",
    "missing_bodies": "Captures whose body the store lacks (answered 404).",
    "corrupt_bodies": "Captures whose stored body does not match its hash (answered 502).",
    "slow_clients_cut": "Responses abandoned because the client stopped reading.",
    "in_flight": "Requests being answered.",
    "body_cache_bytes": "Bytes held by the body cache.",
}


def render_prometheus(metrics: ReplayMetrics, prefix: str = "replay") -> str:
    """Prometheus text format 0.0.4: `{prefix}_{name}_total` counters and gauges."""
    lines = [*field_samples(metrics, prefix, gauges=_GAUGES, help_texts=_HELP, skip=("started_at",)),
             *uptime_samples(prefix, metrics.uptime_s())]
    return "\n".join(lines) + "\n"
