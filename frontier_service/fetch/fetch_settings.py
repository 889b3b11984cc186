"""Typed knobs of the fetcher: connection pool, timeouts, size caps, redirects and retries."""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_USER_AGENT = "archive-pipelines-frontier/0.1 (+https://github.com/archive-pipelines)"


@dataclass(frozen=True)
class FetchSettings:
    """How the fetcher talks to the web. Per-call overrides exist for the size cap,
    redirects and attempts (robots.txt uses smaller ones)."""

    user_agent: str = DEFAULT_USER_AGENT
    accept: str = "text/html,application/xhtml+xml,*/*;q=0.8"
    accept_encoding: str = "gzip, deflate, br, zstd"  # what fetch.decoding removes
    connection_limit: int = 512  # open connections across all hosts
    limit_per_host: int = 1  # politeness: one connection per host
    dns_cache_ttl_s: int = 300
    keepalive_timeout_s: float = 15.0
    # Idle keep-alive connections kept across all hosts (each is a descriptor and buffers);
    # beyond it the longest idle are closed (fetch/bounded_connector.py). 0: none kept.
    max_idle_connections: int = 512
    # Per request. The connect timeout covers the socket connect only, not the wait for a
    # free pooled connection (with limit_per_host=1 a request may queue behind another to
    # the same host, which is not the host's fault); the total timeout does include it.
    connect_timeout_s: float = 10.0
    read_timeout_s: float = 15.0  # longest silence between two reads
    total_timeout_s: float = 30.0  # one request, headers and body
    fetch_deadline_s: float = 120.0  # one fetch: every hop, retry and backoff
    max_body_bytes: int = 10 * 1024 * 1024  # on the wire, and decoded
    # Decoded bytes per wire byte beyond which a body is cut as a compression bomb (checked
    # after its first MiB; why 1000: archive_pipelines.content_coding).
    max_decode_ratio: float = 1000.0
    max_header_bytes: int = 32 * 1024  # one header line; aiohttp's 8 KB rejects big cookies
    max_redirects: int = 10
    # Per hop, for transient failures. aiohttp itself resends a GET once when the server
    # drops the connection (RFC 9112, no opt-out: aio-libs/aiohttp#10790), so one attempt
    # can be two requests on the wire.
    max_attempts: int = 3
    retry_backoff_s: tuple[float, ...] = (0.5, 2.0)  # wait before retry 1, 2, ... (last repeats)
    max_retry_after_s: float = 5.0  # honour a short Retry-After; a longer one ends the fetch
    retry_statuses: frozenset[int] = frozenset({429, 502, 503, 504})
    chunk_bytes: int = 64 * 1024

    def backoff(self, attempt: int) -> float:
        """Seconds to wait after failed attempt number `attempt` (1-based)."""
        if not self.retry_backoff_s:
            return 0.0
        return self.retry_backoff_s[min(attempt, len(self.retry_backoff_s)) - 1]
