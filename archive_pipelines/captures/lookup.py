"""Lookups: a URL's captures (by the crawler's canonical form), a site or path prefix, a
session's pages, the captures of a body; and the time bounds they take."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from archive_pipelines.archive_error import ArchiveError
from archive_pipelines.captures.record_parser import url_key
from archive_pipelines.catalog import Capture, Catalog, FirstPage, SiteCaptures

_WAYBACK = re.compile(r"[0-9]{4}(?:[0-9]{2}){0,5}")  # YYYY[MM[DD[hh[mm[ss]]]]]
_ISO_DAY = re.compile(r"([0-9]{4})-([0-9]{2})(?:-([0-9]{2}))?")  # YYYY-MM, YYYY-MM-DD
_EPOCH = re.compile(r"[0-9]{9,11}(?:\.[0-9]{1,6})?")
_SHA256 = re.compile(r"(?:sha256:)?([0-9a-f]{64})")


class BadLookup(ArchiveError):
    """A lookup's input the catalog cannot be asked with (bad URL, time or hash)."""


def when_ms(text: str, *, end: bool = False) -> int:
    """Epoch ms of a time bound: unix seconds (`1700000000[.5]`; see `_wayback_hour`), a Wayback-style
    `YYYY[MM[DD[hh[mm[ss]]]]]` or ISO 8601 (`2026-11-25`, `2026-11-25T10:00:00`, UTC when no
    zone; `2026-11`, a month, too). A partial date or time as the upper bound (`end`) means
    its last millisecond."""
    given = text.strip()
    day = _ISO_DAY.fullmatch(given)
    # A year-month or a date is the same as its digits (`202611`, `20261125`).
    text = "".join(part for part in day.groups() if part) if day else given
    if _EPOCH.fullmatch(text) and not _wayback_hour(text):
        return round(float(text) * 1000)
    if _WAYBACK.fullmatch(text):
        digits = text
        filler = "1231235959" if end else "0101000000"
        full = digits + filler[len(digits) - 4:]
        try:
            moment = datetime.strptime(full, "%Y%m%d%H%M%S").replace(tzinfo=UTC)
        except ValueError:
            if end and len(digits) == 6:  # a month's last day
                moment = _month_end(digits)
            else:
                raise BadLookup(f"bad time {given!r}: not a calendar date") from None
        return int(moment.timestamp() * 1000) + (999 if end else 0)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise BadLookup(f"bad time {given!r}: give unix seconds, YYYYMMDDhhmmss (or a "
                           "leading part of it) or an ISO 8601 date/time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    bonus = 0
    if end and len(text) == 10:  # a bare ISO date as the upper bound: the whole day
        bonus = 86_400_000 - 1
    return int(moment.timestamp() * 1000) + bonus


def _wayback_hour(text: str) -> bool:
    """Ten digits that are a valid `YYYYMMDDhh` of 1990-2099 are that hour: as unix seconds
    they would be 2033-2036 (write a fraction, `2026112510.0`, to mean seconds then)."""
    if len(text) != 10 or not text.isdigit() or not "1990" <= text[:4] <= "2099":
        return False
    try:
        datetime.strptime(text, "%Y%m%d%H")
    except ValueError:
        return False
    return True


def _month_end(digits: str) -> datetime:
    year, month = int(digits[:4]), int(digits[4:6])
    if not 1 <= month <= 12:
        raise BadLookup(f"bad time {digits!r}: month {month}")
    following = datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=UTC)
    return datetime.fromtimestamp(following.timestamp() - 1, UTC)


def canonical_target(url: str) -> tuple[str, str, str]:
    """(canonical URL, its hash, site) of a URL to look up; BadLookup when the crawler
    could not have fetched it."""
    key = url_key(url)
    if key is None:
        raise BadLookup(f"bad URL {url[:200]!r}: not an absolute http(s) URL with a host")
    return key


def find_url(catalog: Catalog, url: str, *, prefix: bool = False, from_ms: int | None = None,
             to_ms: int | None = None, limit: int | None = None) -> tuple[str, list[Capture]]:
    """(canonical form, captures newest first) of a URL, or of every URL under it (`prefix`)."""
    canonical, url_hash, site = canonical_target(url)
    if prefix and canonical == site + "/" and not url.rstrip().endswith("/"):
        canonical = site  # `http://example.com` as a prefix: the whole site
    with catalog.reading() as tx:
        if prefix:
            found = tx.captures.captures_by_prefix(site, canonical, from_ms=from_ms, to_ms=to_ms,
                                       limit=limit)
        else:
            found = tx.captures.captures_by_url(url_hash, from_ms=from_ms, to_ms=to_ms, limit=limit)
    return canonical, found


def find_session(catalog: Catalog, session_id: str, *, every_request: bool = False,
                 limit: int | None = None) -> list[Capture]:
    with catalog.reading() as tx:
        return tx.captures.captures_of_session(session_id, pages_only=not every_request, limit=limit)


def find_body(catalog: Catalog, sha256: str, *, limit: int | None = None) -> list[Capture]:
    match = _SHA256.fullmatch(sha256.strip().lower())
    if match is None:
        raise BadLookup(f"bad hash {sha256[:100]!r}: expected 64 hex digits (sha256)")
    with catalog.reading() as tx:
        return tx.captures.captures_of_body(match.group(1), limit=limit)


def note(capture: Capture) -> str:
    """What a listing says beside a capture: failed, unchanged, truncated, body not stored,
    redirect; a browser page load's screenshot or DOM."""
    if capture.kind == "screenshot" or capture.kind == "dom":
        what = "screenshot" if capture.kind == "screenshot" else "rendered DOM"
        return f"the page's {what}" + ("" if capture.stored else ", body not in the store")
    if capture.status_code is None:
        return f"failed: {capture.error or 'no response'}"
    notes = []
    if capture.unchanged:
        notes.append("unchanged: not modified since an earlier capture, whose body it keeps")
    if capture.kind == "redirect":
        notes.append(f"-> {capture.final_url or '?'}")
    if capture.truncated:
        notes.append("truncated body")
    if capture.body_sha256 is not None and not capture.stored:
        notes.append("body not in the store")
    return ", ".join(notes)


@dataclass(frozen=True)
class DayCaptures:
    """What the catalog holds of a crawl day (YYYY-MM-DD): its ingested segments, and their
    captures per site (most pages first)."""

    segments: int
    sites: list[SiteCaptures]
    first_pages: list[FirstPage]  # a few sites' first page, to open in replay

    def as_metadata(self) -> dict[str, int]:
        """The day's figures, whichever runs ingested its segments."""
        return {"day_segments": self.segments, "day_sites": len(self.sites),
                "day_pages": sum(site.pages for site in self.sites),
                "day_captures": sum(site.captures for site in self.sites),
                "day_body_bytes": sum(site.body_bytes for site in self.sites)}


def day_captures(catalog: Catalog, day: str, *, sample_sites: int = 10) -> DayCaptures:
    """The day's ingested segments, their captures per site and the first page of up to
    `sample_sites` sites (one read transaction)."""
    with catalog.reading() as tx:
        return DayCaptures(tx.days.crawl_segments_of_day(day), tx.days.captures_per_site(day),
                           tx.days.first_pages(day, limit=sample_sites))
