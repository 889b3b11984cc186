"""The crawler's DNS: `host_map` names go to fixed addresses; every address meets the policy."""

from __future__ import annotations

import fnmatch
import logging
import socket
from collections.abc import Sequence

from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import DefaultResolver

from archive_pipelines.crawls.networks import ip_literal, parse_target
from frontier_service.fetch.failures import AddressRefused
from frontier_service.scope.address_policy import AddressPolicy

log = logging.getLogger(__name__)

_PUBLIC_ONLY = AddressPolicy()

__all__ = ["CrawlResolver", "parse_target"]


class CrawlResolver(AbstractResolver):
    """Resolves names through `host_map` (exact names or globs) or the system resolver.

    A mapped port replaces the URL's port, so `http://site0001.test/` can reach a test web
    on 127.0.0.1:8080. Every address, host_map targets included, must pass `policy` with the
    port it will be reached on: refused ones are dropped, and a name with nothing left fails
    to resolve (AddressRefused, an OSError, with the reason).
    aiohttp connects to exactly the addresses and ports returned (and caches them per host
    and port), so what was checked is what is reached. It does not ask about IP-literal
    hosts: the Fetcher passes those here itself, and they are judged as they are.

    Args:
        host_map: (name or glob, "ip[:port]") pairs.
        policy: the addresses that may be reached (default: public ones only).
        names: the resolver for other names (default: aiohttp's, i.e. the system's).
    """

    def __init__(self, host_map: Sequence[tuple[str, str]] = (), *,
                 policy: AddressPolicy = _PUBLIC_ONLY,
                 names: AbstractResolver | None = None) -> None:
        self.policy = policy
        self._exact: dict[str, tuple[str, int | None]] = {}
        self._globs: list[tuple[str, tuple[str, int | None]]] = []
        for name, target in host_map:
            key = name.strip().lower().rstrip(".")
            parsed = parse_target(target)
            reason = (policy.address_refusal(parsed[0]) if parsed[1] is None
                      else policy.refusal(*parsed))
            if reason is not None:
                log.warning("host_map sends %s to %s, which will be refused: %s", key, target, reason)
            if any(c in key for c in "*?["):
                self._globs.append((key, parsed))
            else:
                self._exact[key] = parsed
        self._fallback = names

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
        if ip_literal(host) is not None:
            address = host.strip("[]")
            reason = self.policy.refusal(address, port)
            if reason is not None:
                raise AddressRefused(reason)
            return [_result(host, address, port)]
        target = self.mapped(host)
        if target is not None:
            address, mapped_port = target
            port = mapped_port or port  # the port connected to
            reason = self.policy.refusal(address, port)
            if reason is not None:
                raise AddressRefused(f"host_map sends {host} to {address}, which is refused: {reason}")
            return [_result(host, address, port)]
        if self._fallback is None:
            self._fallback = DefaultResolver()
        results = await self._fallback.resolve(host, port, family)
        allowed = [r for r in results if self.policy.allows(r["host"], r["port"])]
        if not allowed:
            first = results[0] if results else None
            reason = "no address" if first is None else self.policy.refusal(first["host"], first["port"])
            raise AddressRefused(f"{host} resolves only to refused addresses ({reason})")
        return allowed

    async def close(self) -> None:
        if self._fallback is not None:
            await self._fallback.close()


def _result(hostname: str, address: str, port: int) -> ResolveResult:
    return ResolveResult(hostname=hostname, host=address, port=port,
                         family=socket.AF_INET6 if ":" in address else socket.AF_INET,
                         proto=0, flags=socket.AI_NUMERICHOST)
