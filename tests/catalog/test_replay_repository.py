"""`tx.replay`: a URL's captures by SURT key in time, the nearest with its neighbours, and
SURT-ordered key-range pages (SQLite and PostgreSQL)."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import event

from archive_pipelines.catalog import Capture, Catalog, KeyRange, capture_key, key_after_prefix
from archive_pipelines.surt import surt, urlkey
from archive_testkit.recorded_captures import Fetch, record_fetches

T0 = 1_795_000_000_000  # 2026-11-18, epoch ms
PAGE = "http://www.example.com/page"
KEY = surt(PAGE)  # com,example)/page


def _times(captures: list[Capture]) -> list[int]:
    return [c.fetched_ms - T0 for c in captures]


def test_a_timeline_holds_the_replayable_captures_of_one_key_in_time_order(catalog: Catalog) -> None:
    record_fetches(catalog, [
        Fetch(PAGE, T0 + 30),
        Fetch("https://example.com/page/", T0 + 10),  # the same SURT key
        Fetch(PAGE, T0 + 20, status=None, body=None),  # a failed fetch
        Fetch(PAGE, T0 + 40, body=b"lost", stored=False),  # its body is not in the store
        Fetch(PAGE, T0 + 50, status=404, body=b"gone"),  # a recorded error page
        Fetch(PAGE, T0 + 60, status=301, body=None, kind="redirect", location="http://x.test/"),
        Fetch(PAGE, T0 + 70, status=204, body=None),  # no body, not a redirect
        Fetch("http://example.com/page2", T0 + 15),  # another key
    ])
    with catalog.reading() as tx:
        assert _times(tx.replay.timeline(KEY)) == [10, 30, 50, 60]
        assert _times(tx.replay.timeline(KEY, reverse=True)) == [60, 50, 30, 10]
        assert _times(tx.replay.timeline(KEY, from_ms=T0 + 30, to_ms=T0 + 50)) == [30, 50]
        assert _times(tx.replay.timeline(KEY, limit=2)) == [10, 30]
        assert _times(tx.replay.timeline(KEY, limit=1, reverse=True)) == [60]
        assert tx.replay.timeline("com,example)/nothing") == []
        found = tx.replay.timeline(KEY)
    assert {c.urlkey for c in found} == {KEY}
    assert [c.url for c in found][:2] == ["https://example.com/page/", PAGE]
    assert [(c.status_code, c.stored) for c in found] == [(200, True), (200, True), (404, True),
                                                          (301, False)]


def test_captures_at_the_same_millisecond_keep_their_recording_order(catalog: Catalog) -> None:
    record_fetches(catalog, [Fetch(PAGE, T0, body=b"a"), Fetch(PAGE, T0, body=b"b")])
    record_fetches(catalog, [Fetch(PAGE, T0, body=b"c")])
    with catalog.reading() as tx:
        ids = [c.id for c in tx.replay.timeline(KEY)]
        assert ids == sorted(ids) and len(ids) == 3
        assert [c.id for c in tx.replay.timeline(KEY, reverse=True)] == ids[::-1]
        middle = tx.replay.nearest(KEY, at_ms=T0)
    # Every capture is at T0: the nearest is the last one at or before it; its neighbours by id.
    assert middle is not None
    assert (middle.capture.id, middle.prev and middle.prev.id, middle.next) == (ids[2], ids[1], None)
    assert (middle.first.id, middle.last.id) == (ids[0], ids[2])


@pytest.mark.parametrize(("at", "nearest", "prev", "next_"), [
    (-1000, 0, None, 100),  # before the first
    (0, 0, None, 100),
    (49, 0, None, 100),
    (50, 0, None, 100),  # a tie goes to the earlier
    (51, 100, 0, 200),
    (150, 100, 0, 200),  # a tie again
    (199, 200, 100, 300),
    (300, 300, 200, None),
    (10_000, 300, 200, None),  # after the last
])
def test_nearest_is_closest_in_time_ties_to_the_earlier_with_its_neighbours(
        catalog: Catalog, at: int, nearest: int, prev: int | None, next_: int | None) -> None:
    record_fetches(catalog, [Fetch(PAGE, T0 + ms) for ms in (200, 0, 300, 100)])
    record_fetches(catalog, [Fetch(PAGE, T0 + 250, status=None, body=None)])  # not replayable
    with catalog.reading() as tx:
        found = tx.replay.nearest(KEY, at_ms=T0 + at)
    assert found is not None
    assert found.capture.fetched_ms - T0 == nearest
    assert (found.prev and found.prev.fetched_ms - T0) == prev
    assert (found.next and found.next.fetched_ms - T0) == next_
    assert (found.first.fetched_ms - T0, found.last.fetched_ms - T0) == (0, 300)


def test_nearest_of_a_url_without_replayable_captures_is_none(catalog: Catalog) -> None:
    record_fetches(catalog, [Fetch(PAGE, T0, status=None, body=None)])
    with catalog.reading() as tx:
        assert tx.replay.nearest(KEY, at_ms=T0) is None
        assert tx.replay.nearest("com,example)/other", at_ms=T0) is None


def test_a_single_capture_is_its_own_first_and_last(catalog: Catalog) -> None:
    record_fetches(catalog, [Fetch(PAGE, T0)])
    with catalog.reading() as tx:
        found = tx.replay.nearest(KEY, at_ms=0)
    assert found is not None
    assert found.capture == found.first == found.last and found.prev is found.next is None


SITE = [
    "http://example.com/", "http://example.com/a", "http://example.com/a/b",
    "http://example.com/ab", "http://example.com/b?x=1", "http://sub.example.com/",
    "http://example.com:8080/", "http://example.org/", "http://example.community/",
]


def test_key_range_pages_walk_surt_order_to_the_end_both_ways(catalog: Catalog) -> None:
    record_fetches(catalog, [Fetch(url, T0 + 10 * n + k) for n, url in enumerate(SITE)
                             for k in (0, 1)])
    everything = KeyRange.prefix("com,example")  # example.com, subdomains, ports (not .community)
    with catalog.reading() as tx:
        expected = tx.replay.page(everything, limit=1000)
        keys = [c.urlkey for c in expected]
        assert keys == sorted(keys) and len(expected) == 2 * 7
        assert [capture_key(c) for c in expected] == sorted(capture_key(c) for c in expected)
        for size in (1, 3, 16):
            walked: list[Capture] = []
            after = None
            while page := tx.replay.page(everything, limit=size, after=after):
                walked += page
                after = capture_key(page[-1])
            assert walked == expected
            walked, after = [], None
            while page := tx.replay.page(everything, limit=size, after=after, reverse=True):
                walked += page
                after = capture_key(page[-1])
            assert walked == expected[::-1]
        assert tx.replay.count(everything) == 14
        host = KeyRange.prefix("com,example)/")
        assert sorted({c.url for c in tx.replay.page(host, limit=100)}) == sorted(SITE[:5])
        assert tx.replay.count(host, from_ms=T0 + 11, to_ms=T0 + 21) == 3
        a = KeyRange.prefix("com,example)/a")
        assert [c.url for c in tx.replay.page(a, limit=100)] == [SITE[1]] * 2 + [SITE[2]] * 2 + [
            SITE[3]] * 2
        exact = KeyRange.exact(surt(SITE[1]))
        assert [c.url for c in tx.replay.page(exact, limit=100)] == [SITE[1]] * 2
        assert tx.replay.count(exact) == 2
        numbered = [tx.replay.page_of(everything, number=n, size=5) for n in range(4)]
        assert [c for page in numbered for c in page] == expected
        assert [len(page) for page in numbered] == [5, 5, 4, 0]


def test_long_urls_are_keyed_and_found_by_their_cut_key(catalog: Catalog) -> None:
    long_url = "http://example.com/" + "x" * 5000
    record_fetches(catalog, [Fetch(long_url, T0), Fetch(long_url + "y", T0 + 1)])
    key = urlkey(long_url)
    assert len(key.encode()) <= 1000 and key != urlkey(long_url + "y")
    with catalog.reading() as tx:
        assert [c.url for c in tx.replay.timeline(key)] == [long_url]
        assert tx.replay.count(KeyRange.prefix("com,example)/xxx")) == 2


@pytest.mark.unit
@pytest.mark.parametrize(("prefix", "after"), [
    ("com,example)/", "com,example)0"), ("a", "b"), ("é", "ê"), ("a\U0010ffff", "b"),
    ("a\ud7ff", "a\ue000")])
def test_the_key_after_a_prefix_follows_every_key_with_it(prefix: str, after: str) -> None:
    assert key_after_prefix(prefix) == after
    assert (prefix + "\U0010fffe" * 3).encode() < after.encode()


@pytest.mark.unit
def test_an_empty_prefix_is_refused() -> None:
    with pytest.raises(ValueError, match="empty key prefix"):
        KeyRange.prefix("")


@pytest.mark.parametrize("catalog_url", ["sqlite"], indirect=True)
def test_lookups_seek_the_urlkey_index(catalog: Catalog) -> None:
    record_fetches(catalog, [Fetch(url, T0 + n) for n, url in enumerate(SITE)])
    statements: list[tuple[str, Any]] = []

    def keep(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        if statement.lstrip().upper().startswith("SELECT"):
            statements.append((statement, parameters))

    event.listen(catalog.engine, "before_cursor_execute", keep)
    try:
        with catalog.reading() as tx:
            tx.replay.nearest(KEY, at_ms=T0)
            tx.replay.timeline(KEY, from_ms=T0, limit=10)
            tx.replay.page(KeyRange.prefix("com,example"), limit=10, after=("com,example)/a", T0, 1))
            tx.replay.page(KeyRange.exact(KEY), limit=10, reverse=True)
            tx.replay.count(KeyRange.prefix("com,example)/"))
    finally:
        event.remove(catalog.engine, "before_cursor_execute", keep)
    assert len(statements) == 5  # nearest is one statement
    with catalog.engine.connect() as conn:
        for statement, parameters in statements:
            plan = [str(row[-1]) for row in conn.exec_driver_sql(
                f"EXPLAIN QUERY PLAN {statement}", parameters)]
            reads = [step for step in plan if "page_fetch" in step]
            assert reads and all("INDEX ix_page_fetch_urlkey" in step for step in reads), plan
            assert not any("TEMP B-TREE" in step for step in plan), plan  # no sort of the matches
