"""The replay server's counters and gauges, and their Prometheus text exposition."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field


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
    lines: list[str] = []
    for item in dataclasses.fields(metrics):
        if item.name == "started_at":
            continue
        gauge = item.name in _GAUGES
        name = f"{prefix}_{item.name}" if gauge else f"{prefix}_{item.name}_total"
        if item.name in _HELP:
            lines.append(f"# HELP {name} {_HELP[item.name]}")
        lines.append(f"# TYPE {name} {'gauge' if gauge else 'counter'}")
        lines.append(f"{name} {int(getattr(metrics, item.name))}")
    lines.append(f"# TYPE {prefix}_uptime_seconds gauge")
    lines.append(f"{prefix}_uptime_seconds {metrics.uptime_s():.3f}")
    return "\n".join(lines) + "\n"
