"""An aiohttp resolver that sends every test-web host name to the local test web."""

from __future__ import annotations

import socket

from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import DefaultResolver


class TestWebResolver(AbstractResolver):
    """Resolves names ending in one of `suffixes` to 127.0.0.1:`port`, whatever port the URL has.

    Other names go to aiohttp's default resolver. Use with
    `aiohttp.TCPConnector(resolver=TestWebResolver(port))`, so `http://site0042.test/` reaches
    the test web with `Host: site0042.test`.
    """

    __test__ = False  # not a pytest test class, despite the name

    def __init__(self, port: int, suffixes: tuple[str, ...] = (".test",)) -> None:
        self.port = port
        self.suffixes = suffixes
        self._fallback: AbstractResolver | None = None

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        if host.lower().rstrip(".").endswith(self.suffixes):
            return [
                ResolveResult(
                    hostname=host,
                    host="127.0.0.1",
                    port=self.port,
                    family=socket.AF_INET,
                    proto=0,
                    flags=socket.AI_NUMERICHOST,
                )
            ]
        if self._fallback is None:
            self._fallback = DefaultResolver()
        return await self._fallback.resolve(host, port, family)

    async def close(self) -> None:
        if self._fallback is not None:
            await self._fallback.close()
