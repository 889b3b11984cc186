"""Wayback-style replay paths: `/web/<timestamp><modifier>/<url>`, and 14-digit timestamps.

A timestamp is 1 to 14 digits (`YYYY[MM[DD[hh[mm[ss]]]]]`), a partial one meaning the start
of its period (`2026` is 2026-01-01 00:00:00 UTC); out-of-range parts are clamped as the
Wayback Machine and pywb do (`20261340` is 2026-12-31). A modifier is two lowercase letters
and `_` (`id_`: the original bytes, untouched; `im_`, `js_`, `cs_`, `if_`, `fw_`, `mp_`:
accepted, served as without one). `<url>` is the original URL as typed: `http:/x` (a slash
lost by a proxy) and `x` (no scheme: http) are forgiven; only http and https URLs with a host
replay. Anything else is a `BadReplayPath` (HTTP 400) with a clear message.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from archive_pipelines.archive_error import ArchiveError
from archive_pipelines.replay.timestamps import BadTimestamp, start_ms

MAX_URL_CHARS = 8192  # as the crawler: a longer URL was never captured
_TIMESTAMP = re.compile(r"([0-9]{1,14})([a-z]{2}_)?")
_SCHEME_ONE_SLASH = re.compile(r"(?i)^(https?):/(?!/)")
_SCHEME = re.compile(r"(?i)^[a-z][a-z0-9+.-]*://")


class BadReplayPath(ArchiveError):
    """A replay path or URL that cannot be answered: HTTP 400 with this message."""


@dataclass(frozen=True)
class WaybackPath:
    """A parsed `/web/...` path. `timestamp` is "" when none was given (the latest capture),
    `modifier` "" when none."""

    timestamp: str
    modifier: str
    url: str

    @property
    def at_ms(self) -> int | None:
        """The moment asked for: the start of a partial timestamp's period, the middle of a
        full one's second (so each of two captures a second apart is nearest its own)."""
        if not self.timestamp:
            return None
        return timestamp_ms(self.timestamp) + (500 if len(self.timestamp) == 14 else 0)


def parse_wayback_path(rest: str) -> WaybackPath:
    """The timestamp, modifier and URL of what follows `/web/` (raw, query included)."""
    head, slash, tail = rest.partition("/")
    match = _TIMESTAMP.fullmatch(head) if slash else None
    if match is None:
        if head.isdigit() or (slash and re.fullmatch(r"[0-9]+[a-z]*_?", head)):
            raise BadReplayPath(f"bad timestamp {head[:40]!r}: give 1 to 14 digits "
                                "(YYYYMMDDhhmmss or a leading part of it)")
        return WaybackPath("", "", original_url(rest))
    return WaybackPath(match.group(1), match.group(2) or "", original_url(tail))


def original_url(text: str) -> str:
    """The URL a replay path names, as the capture would have it (see the module's rules)."""
    check_text(text)
    url = _SCHEME_ONE_SLASH.sub(r"\1://", text.strip())
    if url.startswith("//"):
        url = "http:" + url
    elif not _SCHEME.match(url):
        url = "http://" + url
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https"):
        raise BadReplayPath(f"only http and https URLs are archived, not {parts.scheme!r}")
    try:
        host = parts.hostname
        parts.port  # noqa: B018 (a bad port raises)
    except ValueError:
        raise BadReplayPath(f"bad URL {url[:200]!r}") from None
    if not host:
        raise BadReplayPath(f"bad URL {url[:200]!r}: no host")
    return url


def check_text(text: str) -> None:
    """BadReplayPath for a URL too long or holding a NUL (raw or percent-encoded)."""
    if len(text) > MAX_URL_CHARS:
        raise BadReplayPath(f"URL of {len(text):,} characters: at most {MAX_URL_CHARS:,}")
    if "\x00" in text or "%00" in text:
        raise BadReplayPath("a URL may not hold a NUL character (%00)")
    if not text.strip():
        raise BadReplayPath("no URL given: /web/<timestamp>/<url>")


def timestamp_ms(timestamp: str) -> int:
    """Epoch milliseconds of a 1-14 digit timestamp (the start of its period, parts clamped:
    `timestamps.start_ms`); BadReplayPath for anything else."""
    try:
        return start_ms(timestamp)
    except BadTimestamp:
        raise BadReplayPath(f"bad timestamp {timestamp[:40]!r}: give 1 to 14 digits") from None
