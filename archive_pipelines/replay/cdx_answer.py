"""The CDX API's answer to a request, in the Internet Archive's dialect (`/cdx/search/cdx`) or
pywb's (`/cdx`): `answer_cdx(params, catalog=..., dialect=..., exclusions=...)`.

Which captures: those replay serves (`tx.replay`), less the withdrawn (`Exclusions`, skipped
a whole withdrawn prefix at a time), read in keyset pages of SURT order (urlkey, time), so the
first lines of any prefix cost one index range however many captures it holds. Parameters:
`cdx_query`; fields: `cdx_fields`; filter and collapse: `cdx_filters`. Order of work: the
captures of the key range and time window, then filters, then `dupecount` (how many earlier
lines of the same URL had the same digest), then collapse, then `limit`.

Output: text lines of space-separated fields (`%20` for a space inside a value), or with
`output=json` the Internet Archive's array of arrays after a header row of field names (`[]`
when nothing matched) and pywb's JSON lines (one object a line). pywb's text lines without
`fl` are CDXJ (`urlkey timestamp {json}`, missing values left out), and pywb answers 404 when
nothing matched, as pywb does; the Internet Archive's dialect answers 200 with no lines.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from archive_pipelines.catalog import (
    Capture,
    CaptureKey,
    Catalog,
    ReplayRepository,
    capture_key,
    key_after_prefix,
)
from archive_pipelines.replay.cdx_fields import DIALECTS, MISSING, NAMES, Dialect, field_value
from archive_pipelines.replay.cdx_filters import Collapse, all_hold
from archive_pipelines.replay.cdx_query import CdxError, CdxQuery, parse_cdx_query
from archive_pipelines.replay.exclusions import Exclusions
from archive_pipelines.surt import surt

TEXT = "text/plain; charset=utf-8"
JSON = "application/json"
JSON_LINES = "text/x-ndjson"
FIRST_BATCH = 100
MAX_BATCH = 5_000
_BEFORE_ALL = -(2**62)  # below any capture time and id: a key's every capture follows it
_UNSAFE = re.compile(r"[ \n\r]")
_ESCAPES = {" ": "%20", "\n": "%0A", "\r": "%0D"}


def _escaped(value: str) -> str:
    """A value that cannot break a text line or split into two fields."""
    return _UNSAFE.sub(lambda found: _ESCAPES[found.group()], value) if _UNSAFE.search(value) \
        else value


@dataclass(frozen=True)
class CdxAnswer:
    """An HTTP answer: status, Content-Type and the whole body."""

    status: int
    content_type: str
    body: bytes


def answer_cdx(params: Mapping[str, list[str]], *, catalog: Catalog, dialect: Dialect,
               exclusions: Exclusions) -> CdxAnswer:
    """The answer to a CDX request with query parameters `params` (name -> its values)."""
    if dialect not in DIALECTS:
        raise ValueError(f"unknown CDX dialect {dialect!r}")
    try:
        query = parse_cdx_query(params, dialect=dialect)
        with catalog.reading() as tx:
            if query.show_num_pages:
                return _num_pages(tx.replay.count(query.keys, from_ms=query.from_ms,
                                                  to_ms=query.to_ms), query, dialect)
            lines = _lines(tx.replay, query, dialect=dialect, exclusions=exclusions)
    except CdxError as exc:
        return CdxAnswer(exc.status, TEXT, f"{exc.message}\n".encode())
    if not lines and dialect == "pywb":
        return CdxAnswer(404, TEXT, f"No Captures found for: {query.url}\n".encode())
    return _render(lines, query, dialect)


def _lines(replay: ReplayRepository, query: CdxQuery, *, dialect: Dialect,
           exclusions: Exclusions) -> list[tuple[Capture, int]]:
    """(capture, dupecount) of every line of the answer, in order."""
    if query.page is not None:
        source: Iterable[Capture] = _numbered_page(replay, query, exclusions)
    elif query.sort == "closest":
        source = _closest(replay, query, exclusions)
    else:
        backwards = (query.sort == "reverse") != query.last
        source = _scan(replay, query, exclusions, reverse=backwards,
                       from_ms=query.from_ms, to_ms=query.to_ms)
    holds = all_hold(query.filters, dialect)
    collapses = [Collapse(field, length) for field, length in query.collapses]
    seen: Counter[tuple[str, str]] = Counter()
    lines: list[tuple[Capture, int]] = []
    for capture in source:
        if query.key_prefix is not None and not surt(capture.url).startswith(query.key_prefix):
            continue
        if not holds(capture):
            continue
        dupes = 0
        if query.show_dupe_count:
            digest = field_value(capture, "digest", dialect)
            dupes = seen[(capture.urlkey, digest)] if digest != MISSING else 0
            seen[(capture.urlkey, digest)] += 1
        if not all(collapse.keeps(capture, dialect) for collapse in collapses):
            continue
        lines.append((capture, dupes))
        if len(lines) == query.limit:
            break
    if query.last and query.page is None and query.sort != "closest":
        lines.reverse()
    return lines


def _scan(replay: ReplayRepository, query: CdxQuery, exclusions: Exclusions, *, reverse: bool,
          from_ms: int | None, to_ms: int | None) -> Iterator[Capture]:
    """The captures of the query's key range within [from_ms, to_ms] in SURT order (or its
    reverse), withdrawn ones left out, read in growing keyset pages."""
    after: CaptureKey | None = None
    batch = min(max(query.limit, FIRST_BATCH), MAX_BATCH)
    while True:
        rows = replay.page(query.keys, limit=batch, after=after, reverse=reverse,
                           from_ms=from_ms, to_ms=to_ms)
        for capture in rows:
            withdrawn = exclusions.covering_prefix(capture.urlkey)
            if withdrawn is not None:  # skip all of it in one seek
                after = (withdrawn if reverse else key_after_prefix(withdrawn),
                         _BEFORE_ALL, _BEFORE_ALL)
                break
            after = capture_key(capture)
            if not exclusions.excludes_key(capture.urlkey):
                yield capture
        else:
            if len(rows) < batch:
                return
        batch = min(batch * 2, MAX_BATCH)


def _closest(replay: ReplayRepository, query: CdxQuery,
             exclusions: Exclusions) -> Iterator[Capture]:
    """The exact URL's captures by distance in time from `closest` (a tie: the earlier)."""
    at = query.closest_ms
    assert at is not None
    earlier_to = at if query.to_ms is None else min(at, query.to_ms)
    later_from = at + 1 if query.from_ms is None else max(at + 1, query.from_ms)
    earlier = _scan(replay, query, exclusions, reverse=True, from_ms=query.from_ms,
                    to_ms=earlier_to)
    later = _scan(replay, query, exclusions, reverse=False, from_ms=later_from,
                  to_ms=query.to_ms)
    before, after = next(earlier, None), next(later, None)
    while before is not None or after is not None:
        if after is None or (before is not None
                             and at - before.fetched_ms <= after.fetched_ms - at):
            assert before is not None
            yield before
            before = next(earlier, None)
        else:
            yield after
            after = next(later, None)


def _numbered_page(replay: ReplayRepository, query: CdxQuery,
                   exclusions: Exclusions) -> list[Capture]:
    assert query.page is not None
    rows = replay.page_of(query.keys, number=query.page, size=query.page_size,
                          from_ms=query.from_ms, to_ms=query.to_ms)
    if not rows and query.page > 0:
        total = replay.count(query.keys, from_ms=query.from_ms, to_ms=query.to_ms)
        pages = math.ceil(total / query.page_size)
        raise CdxError(400, f"page {query.page} is past the last page ({pages} pages of "
                            f"{query.page_size}, numbered from 0)")
    return [row for row in rows if not exclusions.excludes_key(row.urlkey)]


def _num_pages(total: int, query: CdxQuery, dialect: Dialect) -> CdxAnswer:
    pages = math.ceil(total / query.page_size)
    if not query.json:
        return CdxAnswer(200, TEXT, f"{pages}\n".encode())
    if dialect == "pywb":
        body = {"blocks": pages, "pages": pages, "pageSize": query.page_size}
        return CdxAnswer(200, JSON, json.dumps(body).encode() + b"\n")
    return CdxAnswer(200, JSON, f"{pages}\n".encode())


def _render(lines: list[tuple[Capture, int]], query: CdxQuery, dialect: Dialect) -> CdxAnswer:
    names = [NAMES[dialect][field] for field in query.fields]
    if query.show_dupe_count:
        names.append("dupecount")

    def values(capture: Capture, dupes: int) -> list[str]:
        found = [field_value(capture, field, dialect) for field in query.fields]
        return [*found, str(dupes)] if query.show_dupe_count else found

    if query.json and dialect == "ia":
        rows = [names, *(values(c, d) for c, d in lines)] if lines else []
        return CdxAnswer(200, JSON, json.dumps(rows, ensure_ascii=False).encode())
    if query.json:
        text = "".join(json.dumps(dict(zip(names, values(c, d), strict=True)),
                                  ensure_ascii=False) + "\n" for c, d in lines)
        return CdxAnswer(200, JSON_LINES, text.encode())
    if dialect == "pywb" and not query.fields_given:
        return CdxAnswer(200, TEXT, "".join(_cdxj(names, values(c, d)) for c, d in lines).encode())
    text = "".join(" ".join(_escaped(value) for value in values(c, d)) + "\n"
                   for c, d in lines)
    return CdxAnswer(200, TEXT, text.encode())


def _cdxj(names: list[str], values: list[str]) -> str:
    fields = dict(zip(names, values, strict=True))
    key, timestamp = fields.pop("urlkey"), fields.pop("timestamp")
    rest = {name: value for name, value in fields.items() if value != MISSING}
    return f"{_escaped(key)} {timestamp} {json.dumps(rest, ensure_ascii=False)}\n"
