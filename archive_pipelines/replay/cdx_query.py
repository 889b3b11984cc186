"""A CDX request's parameters, parsed and checked into a `CdxQuery`; `CdxError` (HTTP 400)
with the reason for anything malformed.

- `url` (required): `example.com/path`, or with wildcards `example.com/path*` (a prefix) and
  `*.example.com` (the domain); an explicit `matchType` wins over a wildcard (as pywb).
- `matchType`: `exact` (default), `prefix`, `host` (the URL's host, every path), `domain` (the
  host and its subdomains), as SURT key ranges (pywb's: a prefix URL ending in `/` keeps it).
- `from`, `to`: 1-14 digit timestamps, inclusive (`to=2026` is the whole year).
- `limit`: at most this many lines (negative: the last N); 10,000 when absent, 100,000 at most.
- `sort`: `reverse` (newest and last keys first), or `closest` with `closest=<timestamp>`
  (exact URLs only: by distance in time, a tie to the earlier).
- `filter` (repeatable), `collapse` (repeatable): see `cdx_filters`; `fl`: comma-separated
  fields (see `cdx_fields`); `output=json`; `showDupeCount=true` (adds `dupecount`).
- `page`, `pageSize` (100 rows by default, 10,000 at most), `showNumPages=true`: numbered
  pages of the captures in SURT order (filters apply within a page, as the Internet
  Archive's); a page past the last is a 400.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from archive_pipelines.catalog import KeyRange
from archive_pipelines.replay.cdx_fields import DEFAULT_FIELDS, Dialect
from archive_pipelines.replay.cdx_filters import (
    CdxFilter,
    FilterError,
    field_name,
    parse_collapse,
    parse_filter,
)
from archive_pipelines.replay.timestamps import BadTimestamp, end_ms, start_ms
from archive_pipelines.surt import stored_key_prefix, surt, urlkey

MatchType = Literal["exact", "prefix", "host", "domain"]
MATCH_TYPES: tuple[MatchType, ...] = ("exact", "prefix", "host", "domain")
DEFAULT_LIMIT = 10_000
MAX_LIMIT = 100_000
DEFAULT_PAGE_SIZE = 100
MAX_PAGE_SIZE = 10_000
MAX_URL = 8192
MAX_FILTERS = 20
_TRUE = ("true", "1", "yes", "on")
_KNOWN = frozenset({"url", "matchType", "from", "to", "limit", "sort", "closest", "filter", "fl",
                    "collapse", "output", "showDupeCount", "page", "pageSize", "showNumPages"})


class CdxError(Exception):
    """A request the CDX API refuses: `status` (400) and a message for the client."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True)
class CdxQuery:
    """What a CDX request asks for (see the module docstring)."""

    url: str  # as given, wildcards removed
    match_type: MatchType
    keys: KeyRange
    key_prefix: str | None  # a prefix match's whole key prefix (the range may be cut short)
    from_ms: int | None
    to_ms: int | None
    limit: int  # > 0
    last: bool  # the last `limit` lines (a negative limit)
    sort: Literal["", "reverse", "closest"]
    closest_ms: int | None
    filters: tuple[CdxFilter, ...]
    collapses: tuple[tuple[str, int | None], ...]
    fields: tuple[str, ...]  # canonical names, in output order
    fields_given: bool  # `fl` was given
    json: bool
    show_dupe_count: bool
    page: int | None
    page_size: int
    show_num_pages: bool


def parse_cdx_query(params: Mapping[str, list[str]], *, dialect: Dialect) -> CdxQuery:
    """The query `params` (name -> values, as a query string parses) ask for; CdxError(400)."""
    try:
        return _parse(params, dialect)
    except (FilterError, BadTimestamp) as exc:
        raise CdxError(400, str(exc)) from None


def _one(params: Mapping[str, list[str]], name: str) -> str | None:
    values = params.get(name) or []
    if len(values) > 1:
        raise CdxError(400, f"{name} is given {len(values)} times (once at most)")
    return values[0] if values else None


def _flag(params: Mapping[str, list[str]], name: str) -> bool:
    value = _one(params, name)
    return value is not None and value.lower() in _TRUE


def _integer(value: str, name: str, *, low: int, high: int) -> int:
    text = value.strip()
    digits = text[1:] if text[:1] in "+-" else text
    if not digits.isascii() or not digits.isdigit() or len(digits) > 12:
        raise CdxError(400, f"{name} {value[:40]!r} is not a whole number")
    number = int(text)
    if not low <= number <= high:
        raise CdxError(400, f"{name} {number} is not between {low} and {high}")
    return number


def _parse(params: Mapping[str, list[str]], dialect: Dialect) -> CdxQuery:
    unknown = sorted(set(params) - _KNOWN)
    if unknown:
        raise CdxError(400, f"unknown parameter {unknown[0][:50]!r}")
    url = _one(params, "url")
    if url is None or not url.strip():
        raise CdxError(400, "url is required (e.g. url=example.com/page)")
    url = url.strip()
    if len(url) > MAX_URL or "\x00" in url:
        raise CdxError(400, f"url is at most {MAX_URL} characters, without NUL")
    match_type, url = _match_type(_one(params, "matchType"), url)
    keys, key_prefix = _key_range(url, match_type)

    from_ms = start_ms(value) if (value := _one(params, "from")) is not None else None
    to_ms = end_ms(value) if (value := _one(params, "to")) is not None else None
    limit_text = _one(params, "limit")
    limit = DEFAULT_LIMIT if limit_text is None else _integer(
        limit_text, "limit", low=-MAX_LIMIT, high=MAX_LIMIT)
    if limit == 0:
        raise CdxError(400, "limit 0 asks for nothing (a negative limit: the last lines)")
    sort = _one(params, "sort") or ""
    if sort not in ("", "reverse", "closest"):
        raise CdxError(400, f"sort {sort[:40]!r} is not reverse or closest")
    closest = _one(params, "closest")
    if sort == "closest":
        if closest is None:
            raise CdxError(400, "sort=closest needs closest=<timestamp>")
        if match_type != "exact":
            raise CdxError(400, "sort=closest is for an exact URL (matchType=exact)")
    closest_ms = start_ms(closest) if closest is not None and sort == "closest" else None

    filters = tuple(parse_filter(text, dialect=dialect) for text in params.get("filter") or [])
    if len(filters) > MAX_FILTERS:
        raise CdxError(400, f"at most {MAX_FILTERS} filters")
    collapses = tuple(parse_collapse(text) for text in params.get("collapse") or [])
    fl = _one(params, "fl")
    fields = DEFAULT_FIELDS if not fl else tuple(
        field_name(name.strip(), what="fl") for name in fl.split(","))
    output = (_one(params, "output") or "text").lower()
    if output not in ("text", "json"):
        raise CdxError(400, f"output {output[:40]!r} is not text or json")
    page_text = _one(params, "page")
    size_text = _one(params, "pageSize")
    return CdxQuery(
        url=url, match_type=match_type, keys=keys, key_prefix=key_prefix, from_ms=from_ms,
        to_ms=to_ms, limit=abs(limit), last=limit < 0, sort=sort,  # type: ignore[arg-type]
        closest_ms=closest_ms, filters=filters, collapses=collapses, fields=fields,
        fields_given=bool(fl), json=output == "json",
        show_dupe_count=_flag(params, "showDupeCount"),
        page=None if page_text is None else _integer(page_text, "page", low=0, high=10**9),
        page_size=DEFAULT_PAGE_SIZE if size_text is None else _integer(
            size_text, "pageSize", low=1, high=MAX_PAGE_SIZE),
        show_num_pages=_flag(params, "showNumPages"))


def _match_type(given: str | None, url: str) -> tuple[MatchType, str]:
    """The match type and the URL without its wildcard."""
    implied: MatchType = "exact"
    if url.startswith("*."):
        implied, url = "domain", url[2:]
    elif url.endswith("*"):
        implied, url = "prefix", url[:-1]
    if not url:
        raise CdxError(400, "url is only a wildcard")
    if given is None:
        return implied, url
    if given not in MATCH_TYPES:
        raise CdxError(400, f"matchType {given[:40]!r} is not exact, prefix, host or domain")
    return given, url


def _key_range(url: str, match_type: MatchType) -> tuple[KeyRange, str | None]:
    """The urlkeys `url` covers, and a prefix match's whole key prefix."""
    key = surt(url)
    host, bracket, _path = key.partition(")")
    if match_type != "exact" and (not bracket or not host):
        raise CdxError(400, f"url {url[:100]!r} has no host to match {match_type} on")
    if match_type == "exact":
        return KeyRange.exact(urlkey(url)), None
    if match_type == "host":
        return KeyRange.prefix(host + ")"), None
    if match_type == "domain":
        return KeyRange(host + ")", host + "-"), None  # the host, then `host,sub...` (pywb's)
    if url.endswith("/") and not key.endswith("/"):
        key += "/"
    stored = stored_key_prefix(key)
    # A long prefix: the range covers what stored keys keep of it; rows are checked whole.
    return KeyRange.prefix(stored), None if stored == key else key
