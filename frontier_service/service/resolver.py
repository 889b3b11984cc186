"""The crawler's DNS: `host_map` names go to fixed addresses; private results are refused."""

from __future__ import annotations

import fnmatch
import socket
from collections.abc import Sequence

from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import DefaultResolver

from frontier_service.service.scope import is_private_address


def parse_target(target: str) -> tuple[str, int | None]:
    """`ip` or `ip:port` (IPv6 as `[ip]:port`) as (ip, port or None); ValueError if malformed."""
    text = target.strip()
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port_text = rest.removeprefix(":") if rest else ""
    elif text.count(":") == 1:
        host, port_text = text.split(":")
    else:
        host, port_text = text, ""
    if not host:
        raise ValueError(f"host_map target {target!r} has no address")
    port = int(port_text) if port_text else None
    if port is not None and not 0 < port < 65536:
        raise ValueError(f"host_map target {target!r}: port out of range")
    return host, port


class CrawlResolver(AbstractResolver):
    """Resolves names through `host_map` (exact names or globs) or the system resolver.

    A mapped port replaces the URL's port, so `http://site0001.test/` can reach a test web
    on 127.0.0.1:8080. Unless `allow_private`, addresses that are loopback, private or
    reserved are dropped, and a name with nothing else left fails to resolve (OSError).
    """

    def __init__(self, host_map: Sequence[tuple[str, str]] = (), *,
                 allow_private: bool = False) -> None:
        self.allow_private = allow_private
        self._exact: dict[str, tuple[str, int | None]] = {}
        self._globs: list[tuple[str, tuple[str, int | None]]] = []
        for name, target in host_map:
            key = name.strip().lower().rstrip(".")
            parsed = parse_target(target)
            if any(c in key for c in "*?["):
                self._globs.append((key, parsed))
            else:
                self._exact[key] = parsed
        self._fallback: AbstractResolver | None = None

    def mapped(self, host: str) -> tuple[str, int | None] | None:
        """Where host_map sends `host`, or None."""
        key = host.lower().rstrip(".")
        found = self._exact.get(key)
        if found is not None:
            return found
        for pattern, target in self._globs:
            if fnmatch.fnmatchcase(key, pattern):
                return target
        return None

    async def resolve(self, host: str, port: int = 0,
                      family: socket.AddressFamily = socket.AF_INET) -> list[ResolveResult]:
        target = self.mapped(host)
        if target is not None:
            address, mapped_port = target
            ipv6 = ":" in address
            results = [ResolveResult(hostname=host, host=address, port=mapped_port or port,
                                     family=socket.AF_INET6 if ipv6 else socket.AF_INET,
                                     proto=0, flags=socket.AI_NUMERICHOST)]
        else:
            if self._fallback is None:
                self._fallback = DefaultResolver()
            results = await self._fallback.resolve(host, port, family)
        if not self.allow_private:
            results = [r for r in results if not is_private_address(r["host"])]
            if not results:
                raise OSError(f"{host} resolves only to private or loopback addresses "
                              "(set allow_private_addresses to crawl them)")
        return results

    async def close(self) -> None:
        if self._fallback is not None:
            await self._fallback.close()
