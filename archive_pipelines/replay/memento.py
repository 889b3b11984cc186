"""Memento (RFC 7089): the `Link` header of a memento and of a TimeGate's answer, TimeMaps
in link format and JSON, and HTTP dates (`Memento-Datetime`, `Accept-Datetime`).

URIs of this server: a memento is `/web/<14-digit timestamp>/<original>`, the TimeGate
`/web/<original>` (no timestamp; `Accept-Datetime` chooses), a TimeMap
`/timemap/link/<original>` (`application/link-format`) or `/timemap/json/<original>`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import format_datetime, parsedate_to_datetime
from urllib.parse import quote

from archive_pipelines.replay.timestamps import timestamp_of

LINK_FORMAT = "application/link-format"
_URI_SAFE = "!#$%&'()*+,-./:;=?@[]^_`{|}~"  # printable ASCII but space, ", <, >, backslash


def header_uri(uri: str) -> str:
    """`uri` as it may stand in a header or a link: non-ASCII, spaces, double quotes, `<`,
    `>` and backslashes percent-encoded (what is already percent-encoded stays so)."""
    return quote(uri, safe=_URI_SAFE)


@dataclass(frozen=True)
class Memento:
    """One capture as Memento names it: its original URL and its time."""

    url: str
    fetched_ms: int

    @property
    def timestamp(self) -> str:
        return timestamp_of(self.fetched_ms)


@dataclass(frozen=True)
class Neighbours:
    """The mementos around one: prev/next None when there is none; first and last may be
    the memento itself."""

    first: Memento | None = None
    prev: Memento | None = None
    next: Memento | None = None
    last: Memento | None = None


def http_date(ms: int) -> str:
    """RFC 1123 date of epoch milliseconds (`Sun, 06 Nov 1994 08:49:37 GMT`)."""
    return format_datetime(datetime.fromtimestamp(ms // 1000, UTC), usegmt=True)


def parse_http_date(text: str) -> int | None:
    """Epoch ms of an `Accept-Datetime` value; None when it is not an HTTP date."""
    try:
        moment = parsedate_to_datetime(text.strip())
    except (TypeError, ValueError, IndexError):
        return None
    if moment is None:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


@dataclass(frozen=True)
class Paths:
    """The server's URIs, under `base` (`http://host:port`, or "" for root-relative)."""

    base: str = ""

    def memento(self, memento: Memento, modifier: str = "") -> str:
        return header_uri(f"{self.base}/web/{memento.timestamp}{modifier}/{memento.url}")

    def timegate(self, url: str) -> str:
        return header_uri(f"{self.base}/web/{url}")

    def timemap(self, url: str, form: str = "link") -> str:
        return header_uri(f"{self.base}/timemap/{form}/{url}")


def _link(uri: str, rel: str, **params: str) -> str:
    extra = "".join(f'; {name}="{value}"' for name, value in params.items())
    return f'<{header_uri(uri)}>; rel="{rel}"{extra}'


def link_header(url: str, paths: Paths, *, memento: Memento | None,
                neighbours: Neighbours) -> str:
    """The `Link` of a memento (or, `memento` None, of a TimeGate's redirect): original,
    timegate, timemap, and first/prev/next/last memento with their datetimes, several
    relations on one URI joined as RFC 8288 allows (`rel="first memento"`)."""
    links = [_link(url, "original"), _link(paths.timegate(url), "timegate"),
             _link(paths.timemap(url), "timemap", type=LINK_FORMAT)]
    rels: dict[Memento, list[str]] = {}
    for name in ("first", "prev", "next", "last"):
        other = getattr(neighbours, name)
        if other is not None:
            rels.setdefault(other, []).append(name)
    if memento is not None:
        rels.setdefault(memento, [])
    ordered = sorted(rels, key=lambda m: m.fetched_ms)
    for other in ordered:
        names = rels[other]
        rel = " ".join([*names, "memento"])
        links.append(_link(paths.memento(other), rel, datetime=http_date(other.fetched_ms)))
    return ", ".join(links)


def timemap_link(url: str, mementos: Sequence[Memento], paths: Paths) -> str:
    """A TimeMap in link format (RFC 7089 section 5.1.1), oldest memento first."""
    lines = [_link(url, "original"), _link(paths.timegate(url), "timegate"),
             _link(paths.timemap(url), "self", type=LINK_FORMAT, **_span(mementos))]
    last = len(mementos) - 1
    for index, memento in enumerate(mementos):
        rel = "memento"
        if index == 0:
            rel = "first memento" if last else "first last memento"
        elif index == last:
            rel = "last memento"
        lines.append(_link(paths.memento(memento), rel, datetime=http_date(memento.fetched_ms)))
    return ",\n".join(lines) + "\n"


def _span(mementos: Sequence[Memento]) -> dict[str, str]:
    if not mementos:
        return {}
    return {"from": http_date(mementos[0].fetched_ms), "until": http_date(mementos[-1].fetched_ms)}


def timemap_json(url: str, mementos: Sequence[Memento], paths: Paths) -> str:
    """A TimeMap as JSON (the shape of the Memento aggregator's and pywb's): `original_uri`,
    `timegate_uri`, `timemap_uri` and `mementos` (`list`, `first`, `last`)."""
    def item(memento: Memento) -> dict[str, str]:
        return {"datetime": datetime.fromtimestamp(memento.fetched_ms // 1000, UTC)
                .strftime("%Y-%m-%dT%H:%M:%SZ"), "uri": paths.memento(memento)}

    body: dict[str, object] = {
        "original_uri": url, "timegate_uri": paths.timegate(url),
        "timemap_uri": {"link_format": paths.timemap(url), "json_format": paths.timemap(url, "json")},
        "mementos": {"list": [item(m) for m in mementos]},
    }
    if mementos:
        listed = body["mementos"]
        assert isinstance(listed, dict)
        listed["first"] = item(mementos[0])
        listed["last"] = item(mementos[-1])
    return json.dumps(body, indent=1) + "\n"
