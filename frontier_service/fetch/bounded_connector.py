"""A TCPConnector that keeps at most `max_idle` keep-alive connections across all hosts.

aiohttp pools every released connection per host until `keepalive_timeout`, with no cap on
their number: a crawl of thousands of hosts holds one idle socket (a descriptor and its
buffers) per host fetched in the last 15 s. `limit` counts only connections in use. Here,
once the pool holds more than `max_idle`, the connections idle longest are closed. A host
whose connection was closed pays one new connect on its next request.

This reads aiohttp's pool (`_conns`: key -> deque of (protocol, released at), the oldest
left), which aiohttp has kept that shape across 3.x; tests/frontier_service/fetch/
test_bounded_connector.py counts the sockets and fails if it stops holding.
"""

from __future__ import annotations

from typing import Any

import aiohttp


class BoundedIdleConnector(aiohttp.TCPConnector):
    """TCPConnector whose idle keep-alive connections number at most `max_idle` (0: none kept)."""

    def __init__(self, *, max_idle: int, **kwargs: Any) -> None:
        if max_idle < 0:
            raise ValueError(f"max_idle must not be negative, got {max_idle}")
        super().__init__(**kwargs)
        self.max_idle = max_idle
        self.idle_closed = 0  # connections closed to keep the pool under max_idle

    @property
    def idle_connections(self) -> int:
        return sum(len(conns) for conns in self._conns.values())

    def _release(self, key: Any, protocol: Any, *, should_close: bool = False) -> None:
        super()._release(key, protocol, should_close=should_close)
        # A pooled key holds 1..limit_per_host connections: with few keys, skip the count.
        per_host = self._limit_per_host
        if not per_host or len(self._conns) * per_host > self.max_idle:
            self._trim()

    def _trim(self) -> None:
        """Close the longest-idle connections until at most `max_idle` remain.

        The pool's keys are in the order they last became idle from empty, so the first
        keys hold the oldest connections (near enough: a host with several is one key)."""
        excess = self.idle_connections - self.max_idle
        while excess > 0 and self._conns:
            key = next(iter(self._conns))
            conns = self._conns[key]
            while conns and excess > 0:
                protocol, _ = conns.popleft()
                transport = protocol.transport
                protocol.close()
                if key.is_ssl and not self._cleanup_closed_disabled:
                    self._cleanup_closed_transports.append(transport)
                self.idle_closed += 1
                excess -= 1
            if not conns:
                del self._conns[key]
