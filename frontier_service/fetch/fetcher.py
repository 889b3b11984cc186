"""Fetcher: one shared aiohttp session, capped bodies decoded in bounded steps, manual
redirects, retries with backoff."""

from __future__ import annotations

import asyncio
import time
from types import TracebackType
from urllib.parse import urljoin, urlsplit

import aiohttp
from aiohttp.abc import AbstractResolver
from yarl import URL

from archive_pipelines.canonical_urls import InvalidURL, canonicalize, without_userinfo
from frontier_service.fetch.body import read_body
from frontier_service.fetch.bounded_connector import BoundedIdleConnector
from frontier_service.fetch.failures import Failure, classify
from frontier_service.fetch.fetch_settings import FetchSettings
from frontier_service.fetch.result import FetchErrorKind, FetchResult, RedirectHop
from frontier_service.fetch.trace import FetchTrace, HopResponse

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_REDIRECT_BODY_CAP = 64 * 1024  # read a redirect's small body so the connection is reusable
_REQUEST_ERRORS = (aiohttp.ClientError, TimeoutError, OSError, ValueError)


class Fetcher:
    """GETs URLs through one pooled `aiohttp.ClientSession`; use as `async with Fetcher(...)`.

    Args:
        settings: pool, timeouts, caps, redirect and retry policy.
        resolver: DNS resolver for the connector (tests pass `TestWebResolver(port)`). It
            is asked about IP-literal hosts too, which aiohttp would connect to without a
            lookup, so a resolver that refuses addresses (CrawlResolver) sees every hop.
    """

    def __init__(
        self, settings: FetchSettings | None = None, *, resolver: AbstractResolver | None = None
    ) -> None:
        self.settings = settings or FetchSettings()
        self._resolver = resolver
        self._session: aiohttp.ClientSession | None = None

    async def start(self) -> None:
        """Open the session (needs a running event loop)."""
        if self._session is not None:
            return
        s = self.settings
        # The connector caches the resolver's answers and connects to exactly those
        # addresses (no second lookup), so an address the resolver checked is the one reached.
        connector = BoundedIdleConnector(
            max_idle=s.max_idle_connections,
            limit=s.connection_limit,
            limit_per_host=s.limit_per_host,
            ttl_dns_cache=s.dns_cache_ttl_s,
            resolver=self._resolver,
            keepalive_timeout=s.keepalive_timeout_s,
        )
        timeout = aiohttp.ClientTimeout(
            total=s.total_timeout_s, sock_connect=s.connect_timeout_s, sock_read=s.read_timeout_s
        )
        self._session = aiohttp.ClientSession(
            connector=connector,
            timeout=timeout,
            headers=dict(self._default_request_headers()),
            cookie_jar=aiohttp.DummyCookieJar(),  # a crawler must not carry cookies between hosts
            # Bodies are decoded by read_body in bounded steps, yielding to the loop between: aiohttp
            # would inflate a whole network chunk in one call, a bomb in a few calls.
            auto_decompress=False,
            max_line_size=s.max_header_bytes,
            max_field_size=s.max_header_bytes,
        )

    async def close(self) -> None:
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()

    async def __aenter__(self) -> Fetcher:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def fetch(
        self,
        url: str,
        *,
        max_body_bytes: int | None = None,
        max_redirects: int | None = None,
        max_attempts: int | None = None,
        follow_redirects: bool = True,
        conditional: list[tuple[str, str]] | None = None,
        started_at: float | None = None,
    ) -> FetchResult:
        """GET `url`, following redirects one hop at a time; never raises for web trouble.

        With follow_redirects=False a redirect is the final response (its hop recorded in
        `redirects`): a crawler queues the target itself, so politeness and dedup apply to it.
        `conditional`: headers sent with the first hop only (If-None-Match, If-Modified-Since:
        they validate what `url` answered before, not what a redirect leads to).
        `started_at`: the wall-clock time the request counts as begun (left out: now).
        """
        s = self.settings
        trace = FetchTrace(url, self._default_request_headers())
        if started_at is not None:
            trace.started_at = started_at
        try:
            async with asyncio.timeout(s.fetch_deadline_s):
                return await self._follow(
                    trace,
                    s.max_body_bytes if max_body_bytes is None else max_body_bytes,
                    s.max_redirects if max_redirects is None else max_redirects,
                    attempts=max(1, s.max_attempts if max_attempts is None else max_attempts),
                    follow=follow_redirects, conditional=conditional or None,
                )
        except TimeoutError:
            message = f"fetch deadline of {s.fetch_deadline_s:g} s exceeded"
            return trace.failed(FetchErrorKind.TIMEOUT, message)

    async def _follow(
        self, trace: FetchTrace, cap: int, max_redirects: int, *, attempts: int, follow: bool = True,
        conditional: list[tuple[str, str]] | None = None,
    ) -> FetchResult:
        seen = {_loop_key(trace.url)}
        for hop in range(max_redirects + 1):
            outcome, tries = await self._request_with_retries(
                trace.current, cap, attempts, extra=conditional if hop == 0 else None)
            if isinstance(outcome, Failure):
                return trace.failed(outcome.kind, outcome.message, attempts=tries)
            if outcome.status not in REDIRECT_STATUSES or outcome.location is None:
                return trace.finished(outcome, tries)
            target = _resolve_location(trace.current, outcome.location)
            trace.redirects.append(RedirectHop(trace.current, outcome.status, target or outcome.location))
            if target is None:
                message = f"redirect to unusable Location {outcome.location[:200]!r}"
                return trace.finished(outcome, tries, FetchErrorKind.BAD_REDIRECT, error=message)
            if not follow:
                return trace.finished(outcome, tries)
            if _loop_key(target) in seen:
                message = f"redirect loop: {target[:200]} was already visited"
                return trace.finished(outcome, tries, FetchErrorKind.REDIRECT_LOOP, error=message)
            seen.add(_loop_key(target))
            trace.current = target
        message = f"more than {max_redirects} redirects"
        return trace.failed(FetchErrorKind.TOO_MANY_REDIRECTS, message)

    async def _request_with_retries(
        self, url: str, cap: int, attempts: int, *, extra: list[tuple[str, str]] | None = None
    ) -> tuple[HopResponse | Failure, int]:
        """One hop: retry connection trouble, timeouts and 429/5xx-unavailable with backoff."""
        s = self.settings
        for attempt in range(1, attempts + 1):
            try:
                response = await self._request_once(url, cap, extra=extra)
            except _REQUEST_ERRORS as exc:
                failure = classify(exc)
                if not failure.retryable or attempt == attempts:
                    return failure, attempt
                await asyncio.sleep(s.backoff(attempt))
                continue
            if response.status in s.retry_statuses and attempt < attempts:
                wait = response.retry_after_s
                wait = s.backoff(attempt) if wait is None else wait
                if wait <= s.max_retry_after_s:
                    await asyncio.sleep(wait)
                    continue
            return response, attempt
        raise AssertionError("unreachable: the last attempt always returns")

    async def _request_once(self, url: str, cap: int, *,
                            extra: list[tuple[str, str]] | None = None) -> HopResponse:
        session = self._require_session()
        if "@" in url and (URL(url).raw_user is not None or URL(url).raw_password is not None):
            raise ValueError("the URL carries credentials (user:password@), which are never sent")
        if self._resolver is not None:
            await _check_literal_host(self._resolver, url)
        began = time.monotonic()
        async with session.get(url, allow_redirects=False, headers=extra) as response:
            location = response.headers.get("Location")
            is_redirect = response.status in REDIRECT_STATUSES and location is not None
            body = await read_body(
                response, cap=min(cap, _REDIRECT_BODY_CAP) if is_redirect else cap,
                chunk_bytes=self.settings.chunk_bytes, max_ratio=self.settings.max_decode_ratio)
            if body.cut is not None:
                response.close()  # drop the connection rather than drain an endless body
            return HopResponse(
                status=response.status,
                request_headers=list(response.request_info.headers.items()),
                headers=list(response.headers.items()),
                body=body.data,
                cut=body.cut,
                body_encoding=body.encoding,
                content_type=response.content_type if "Content-Type" in response.headers else None,
                charset=response.charset,
                location=location,
                retry_after_s=_retry_after(response.headers.get("Retry-After")),
                response_time_s=time.monotonic() - began,
            )

    @property
    def idle_connections(self) -> int:
        """Keep-alive connections pooled now (0 before start)."""
        if self._session is None:
            return 0
        connector = self._session.connector
        return connector.idle_connections if isinstance(connector, BoundedIdleConnector) else 0

    def _require_session(self) -> aiohttp.ClientSession:
        if self._session is None:
            raise RuntimeError("Fetcher not started: use `async with Fetcher(...)` or await start()")
        return self._session

    def _default_request_headers(self) -> list[tuple[str, str]]:
        s = self.settings
        return [("User-Agent", s.user_agent), ("Accept", s.accept),
                ("Accept-Encoding", s.accept_encoding)]


async def _check_literal_host(resolver: AbstractResolver, url: str) -> None:
    """Pass an IP-literal host through the resolver, which raises OSError if it is refused.

    aiohttp connects to a host that looks like an address (a colon, or only digits and dots)
    without asking the resolver; this uses the same test on the same parse of the URL.
    """
    host = URL(url).raw_host
    if host and (":" in host or host.replace(".", "").isdigit()):
        await resolver.resolve(host, URL(url).port or 0)  # the port connected to


def _resolve_location(base: str, location: str) -> str | None:
    """The absolute http(s) URL a Location header points to, or None if it is unusable."""
    try:
        target = without_userinfo(urljoin(base, location.strip()))
        parts = urlsplit(target)
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    return target


def _loop_key(url: str) -> str:
    """Spellings of one URL (case, default port, fragment) count as the same hop."""
    try:
        return canonicalize(url)
    except InvalidURL:
        return url


def _retry_after(value: str | None) -> float | None:
    """Retry-After in seconds; HTTP-date forms are ignored (None)."""
    if value is None:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    return max(0.0, seconds)
