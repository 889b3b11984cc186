"""robots.txt semantics (RFC 9309): what a fetch outcome means, and the parsed rules."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from protego import Protego

from frontier_service.fetch.result import FetchErrorKind, FetchResult
from frontier_service.fetch.robots_store import StoredRobots

DEFAULT_TTL_S = 24 * 3600.0
DEFAULT_UNREACHABLE_RETRY_S = 600.0
_GARBAGE_SHARE = 0.1  # more than this share of undecodable/control characters: not a text file
_GARBAGE_SAMPLE_BYTES = 8192  # judging the start is enough, and keeps a 512 KB check cheap
_REDIRECT_TROUBLE = frozenset(
    {FetchErrorKind.REDIRECT_LOOP, FetchErrorKind.TOO_MANY_REDIRECTS, FetchErrorKind.BAD_REDIRECT}
)


class RobotsSource(StrEnum):
    PARSED = "parsed"  # 2xx text: its rules apply
    GARBAGE = "garbage"  # 2xx but binary junk: allow all, recorded as such
    MISSING = "missing"  # 4xx, or redirects that lead nowhere: allow all
    UNREACHABLE = "unreachable"  # 5xx, 429, network error, timeout: disallow all for a while
    REFUSED = "refused"  # the host's address is outside the crawl's networks: fetch nothing


@dataclass(frozen=True)
class RobotsRules:
    """The rules for one origin until `expires_at`."""

    origin: str
    source: RobotsSource
    expires_at: float
    user_agent: str
    truncated: bool = False  # the file was cut at the size cap (rules before the cut apply)
    parser: Protego | None = field(default=None, repr=False, compare=False)

    def can_fetch(self, url: str, user_agent: str | None = None) -> bool:
        if self.source in (RobotsSource.UNREACHABLE, RobotsSource.REFUSED):
            return False
        if self.parser is None:
            return True
        return bool(self.parser.can_fetch(url, user_agent or self.user_agent))

    def crawl_delay(self, user_agent: str | None = None) -> float | None:
        """The Crawl-delay of the group matching the user agent, in seconds, or None."""
        if self.parser is None:
            return None
        delay = self.parser.crawl_delay(user_agent or self.user_agent)
        return None if delay is None else float(delay)

    def expired(self, now: float) -> bool:
        return now >= self.expires_at


def entry_from_fetch(
    result: FetchResult,
    now: float,
    *,
    ttl_s: float = DEFAULT_TTL_S,
    unreachable_retry_s: float = DEFAULT_UNREACHABLE_RETRY_S,
) -> StoredRobots:
    """What a robots.txt fetch means, as an entry to store."""
    keep = now + ttl_s
    if result.error_kind is FetchErrorKind.REFUSED:  # a redirect's target: as a dead end
        source = RobotsSource.MISSING if result.redirects else RobotsSource.REFUSED
        return StoredRobots(b"", now + unreachable_retry_s, source)
    if result.error_kind in _REDIRECT_TROUBLE:
        return StoredRobots(b"", keep, RobotsSource.MISSING)
    if result.error is not None or result.status is None:
        return StoredRobots(b"", now + unreachable_retry_s, RobotsSource.UNREACHABLE)
    status = result.status
    if status == 429 or status >= 500:
        return StoredRobots(b"", now + unreachable_retry_s, RobotsSource.UNREACHABLE)
    if not 200 <= status < 300:
        return StoredRobots(b"", keep, RobotsSource.MISSING)
    body = result.body or b""
    if result.truncated:  # the cap fell mid-line: drop the partial rule
        body = body[: body.rfind(b"\n") + 1]
    if is_garbage(body):
        return StoredRobots(b"", keep, RobotsSource.GARBAGE, truncated=result.truncated)
    return StoredRobots(body, keep, RobotsSource.PARSED, truncated=result.truncated)


def is_garbage(body: bytes) -> bool:
    """Whether a robots.txt body is binary junk rather than text."""
    if b"\x00" in body:
        return True
    text = body[:_GARBAGE_SAMPLE_BYTES].decode("utf-8", errors="replace")
    if not text:
        return False
    bad = sum(1 for char in text if char == "\ufffd" or (char < " " and char not in "\t\r\n"))
    return bad > _GARBAGE_SHARE * len(text)


def rules_from_entry(origin: str, entry: StoredRobots, user_agent: str) -> RobotsRules:
    """Parse a stored entry (CPU-bound for big files: call it off the event loop then)."""
    source = RobotsSource(entry.source)
    parser = None
    if source is RobotsSource.PARSED:
        text = entry.body.decode("utf-8", errors="replace").removeprefix("\ufeff")
        parser = Protego.parse(text)
    return RobotsRules(origin, source, entry.expires_at, user_agent, truncated=entry.truncated, parser=parser)
