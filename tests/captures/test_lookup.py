"""Lookups on an ingested real crawl: a URL by its canonical form, a site or path prefix, time
bounds, a session's pages, the captures of a body, redirects and failed fetches."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from sqlalchemy import select

from archive_pipelines.captures.lookup import BadLookup, find_body, find_session, find_url, note, when_ms
from archive_pipelines.captures.segment_ingest import ingest_crawl
from archive_pipelines.catalog import Catalog
from archive_pipelines.catalog.models import PageFetch
from tests.helpers.captures import capture_primary, open_parts
from tests.helpers.crawls import Crawled

AllRows = list[tuple[int, str, str, str, int]]  # id, kind, canonical url, site, fetched_ms


@pytest.fixture(scope="module")
def catalog(crawled: Crawled, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Catalog]:
    """The crawl ingested once into a copy (SQLite); the tests only read it."""
    data_dir = tmp_path_factory.mktemp("lookup") / "data"
    shutil.copytree(crawled.data_dir, data_dir, symlinks=True)
    with open_parts(data_dir) as parts:
        report = ingest_crawl(parts.catalog, capture_primary(parts), data_dir)
        assert report.ingested and not report.failed
        try:
            yield parts.catalog
        finally:
            parts.catalog.engine.dispose()


def all_rows(catalog: Catalog) -> AllRows:
    with catalog.reading() as tx:
        return [tuple(r) for r in tx.session.execute(  # type: ignore[misc]
            select(PageFetch.id, PageFetch.kind, PageFetch.canonical_url, PageFetch.site,
                   PageFetch.fetched_ms))]


def newest_first(found: list[int], rows: AllRows) -> bool:
    when = {r[0]: (r[4], r[0]) for r in rows}
    return [when[i] for i in found] == sorted((when[i] for i in found), reverse=True)


def test_any_spelling_of_a_url_finds_its_canonical_captures(catalog: Catalog) -> None:
    rows = all_rows(catalog)
    two_params = sorted(r[2] for r in rows if r[2].count("=") == 2 and "&" in r[2])
    assert two_params, "the crawl fetched no URL with two query parameters"
    url = two_params[0]
    scheme_host, _, rest = url.partition("://")[2].partition("/")
    path, _, query = rest.partition("?")
    first, second = query.split("&")
    spelled = f"HTTP://{scheme_host.upper()}:80/{path}?{second}&{first}#fragment"
    canonical, found = find_url(catalog, spelled)
    assert canonical == url
    expected = {r[0] for r in rows if r[2] == url}
    assert expected and {c.id for c in found} == expected
    assert find_url(catalog, url)[1] == found


def test_http_and_https_are_different_urls(catalog: Catalog) -> None:
    _canonical, found = find_url(catalog, "http://site0000.test/")
    assert found and all(c.url.startswith("http://") for c in found)
    canonical, secure = find_url(catalog, "https://site0000.test/")
    assert canonical == "https://site0000.test/" and secure == []
    assert find_url(catalog, "https://site0000.test", prefix=True)[1] == []
    assert find_url(catalog, "http://site0000.test:8080/")[1] == []


def test_a_site_prefix_lists_exactly_that_sites_captures(catalog: Catalog) -> None:
    rows = all_rows(catalog)
    site = "http://site0001.test"
    canonical, found = find_url(catalog, "HTTP://Site0001.test", prefix=True)
    assert canonical == site
    assert {c.id for c in found} == {r[0] for r in rows if r[3] == site}
    assert len(found) > 10 and newest_first([c.id for c in found], rows)
    assert find_url(catalog, "http://site0001.test/", prefix=True)[1] == found


def test_a_path_prefix_lists_the_urls_under_it(catalog: Catalog) -> None:
    rows = all_rows(catalog)
    prefix = "http://site0001.test/redirect/"
    _canonical, found = find_url(catalog, prefix, prefix=True)
    expected = {r[0] for r in rows if r[2].startswith(prefix)}
    assert expected and {c.id for c in found} == expected
    assert {c.id for c in find_url(catalog, prefix, prefix=True, limit=3)[1]} < expected
    assert len(find_url(catalog, prefix, prefix=True, limit=3)[1]) == 3


def test_time_bounds_split_a_sites_captures(catalog: Catalog) -> None:
    rows = [r for r in all_rows(catalog) if r[3] == "http://site0001.test"]
    times = sorted({r[4] for r in rows})
    assert len(times) > 4
    middle = times[len(times) // 2]
    every = {r[0] for r in rows}
    later = {c.id for c in find_url(catalog, "http://site0001.test", prefix=True,
                                    from_ms=middle)[1]}
    earlier = {c.id for c in find_url(catalog, "http://site0001.test", prefix=True,
                                      to_ms=middle - 1)[1]}
    assert later | earlier == every and not later & earlier
    assert later == {r[0] for r in rows if r[4] >= middle}
    exactly = find_url(catalog, "http://site0001.test", prefix=True, from_ms=middle,
                       to_ms=middle)[1]
    assert exactly and {c.fetched_ms for c in exactly} == {middle}
    # the same bound written as text: unix seconds, and an ISO time
    assert when_ms(f"{middle / 1000:.3f}") == middle
    iso = datetime.fromtimestamp(middle / 1000, UTC).isoformat()
    assert when_ms(iso) == middle
    assert find_url(catalog, "http://site0001.test", prefix=True, from_ms=times[-1] + 1)[1] == []


def test_a_sessions_pages_and_every_capture(catalog: Catalog, crawled: Crawled) -> None:
    rows = all_rows(catalog)
    session_id = crawled.report.session_id
    pages = find_session(catalog, session_id)
    assert {c.id for c in pages} == {r[0] for r in rows if r[1] == "page"}
    assert all(c.session_id == session_id for c in pages)
    assert newest_first([c.id for c in pages], rows)
    every = find_session(catalog, session_id, every_request=True)
    assert {c.id for c in every} == {r[0] for r in rows}
    assert len(every) > len(pages)  # the redirect hops
    assert len(find_session(catalog, session_id, limit=5)) == 5
    assert find_session(catalog, "00000000-0000-0000-0000-000000000000") == []


def test_a_hash_lists_every_capture_of_that_body(catalog: Catalog) -> None:
    with catalog.reading() as tx:
        bodies = tx.session.execute(select(PageFetch.body_sha256, PageFetch.id)
                                 .where(PageFetch.body_sha256.is_not(None))).all()
    by_body: dict[str, set[int]] = {}
    for body, capture_id in bodies:
        assert body is not None
        by_body.setdefault(body, set()).add(capture_id)
    shared = max(by_body, key=lambda b: len(by_body[b]))
    assert len(by_body[shared]) > 3  # a body many URLs answered with (a 404 page)
    for spelled in (shared, f"sha256:{shared}", shared.upper()):
        found = find_body(catalog, spelled)
        assert {c.id for c in found} == by_body[shared]
        assert all(c.stored and c.body_sha256 == shared for c in found)
    assert find_body(catalog, "0" * 64) == []
    for bad in ("xyz", "0" * 63, "sha256:" + "g" * 64, "../" * 30):
        with pytest.raises(BadLookup, match="bad hash"):
            find_body(catalog, bad)


def test_a_redirect_is_a_hop_to_its_target_and_the_target_a_capture(catalog: Catalog) -> None:
    with catalog.reading() as tx:
        hop_urls = list(tx.session.scalars(select(PageFetch.url).where(PageFetch.kind == "redirect")))
    assert hop_urls, "the crawl followed no redirect"
    for url in hop_urls:
        found = find_url(catalog, url)[1]
        [hop] = [c for c in found if c.kind == "redirect"]
        [page] = [c for c in found if c.kind == "page"]
        assert page.status_code is not None and 300 <= page.status_code < 400
        assert hop.status_code == page.status_code
        assert hop.final_url and hop.final_url != url and note(hop) == f"-> {hop.final_url}"
        assert hop.body_sha256 is None and page.stored  # the 3xx's own body is the page's
        target = [c for c in find_url(catalog, hop.final_url)[1] if c.kind == "page"]
        assert target, f"{url} -> {hop.final_url}: the target is no capture"


def test_failed_fetches_are_captures_marked_as_failed(catalog: Catalog, crawled: Crawled) -> None:
    with catalog.reading() as tx:
        failed = tx.session.execute(select(PageFetch.url, PageFetch.error)
                                 .where(PageFetch.status_code.is_(None))).all()
    errors = {error for _url, error in failed}
    assert "disallowed by robots.txt" in errors
    for url, error in failed:
        [capture] = find_url(catalog, url)[1]
        assert capture.status_code is None and not capture.stored
        assert note(capture) == f"failed: {error}"


@pytest.mark.unit
@pytest.mark.parametrize(("text", "end", "expected"), [
    ("1700000000", False, "2023-11-14T22:13:20.000"),
    ("1700000000.25", False, "2023-11-14T22:13:20.250"),
    ("2026", False, "2026-01-01T00:00:00.000"),
    ("2026", True, "2026-12-31T23:59:59.999"),
    ("202602", True, "2026-02-28T23:59:59.999"),
    ("202402", True, "2024-02-29T23:59:59.999"),
    ("20261125", False, "2026-11-25T00:00:00.000"),
    ("20261125", True, "2026-11-25T23:59:59.999"),
    ("202611251030", True, "2026-11-25T10:30:59.999"),
    ("20261125103015", False, "2026-11-25T10:30:15.000"),
    ("2026-11-25", True, "2026-11-25T23:59:59.999"),
    ("2026-11-25", False, "2026-11-25T00:00:00.000"),
    ("2026-11", False, "2026-11-01T00:00:00.000"),  # the README's example
    ("2026-11", True, "2026-11-30T23:59:59.999"),
    ("2024-02", True, "2024-02-29T23:59:59.999"),
    ("2026-11-25T10:00:00", False, "2026-11-25T10:00:00.000"),
    ("2026-11-25T10:00:00+02:00", False, "2026-11-25T08:00:00.000"),
])
def test_when_ms_reads_every_documented_form(text: str, end: bool, expected: str) -> None:
    moment = datetime.fromtimestamp(when_ms(text, end=end) / 1000, UTC)
    assert moment.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] == expected


@pytest.mark.unit
def test_when_ms_reads_a_wayback_hour() -> None:
    moment = datetime.fromtimestamp(when_ms("2026112510") / 1000, UTC)
    assert moment == datetime(2026, 11, 25, 10, tzinfo=UTC)
    # Ten digits that are no such hour stay unix seconds (every crawl time until 2033).
    assert when_ms("1795582022") == 1_795_582_022_000


@pytest.mark.unit
@pytest.mark.parametrize("text", ["yesterday", "2026-13-01", "20261301", "202613", "2026-11-25T25:00",
                                  "", "1e9"])
def test_when_ms_refuses_what_is_no_time(text: str) -> None:
    with pytest.raises(BadLookup, match="bad time"):
        when_ms(text)


def test_a_url_the_crawler_could_not_fetch_is_a_bad_lookup(catalog: Catalog) -> None:
    for bad in ("site0001.test/", "ftp://site0001.test/", "http://", "/etc/passwd"):
        with pytest.raises(BadLookup, match="bad URL"):
            find_url(catalog, bad)
