"""Memento headers and TimeMaps, checked against RFC 7089's examples (section 5.1.1's
TimeMap of http://a.example.org: its mementos, relations and datetimes)."""

from __future__ import annotations

import json
import re

import pytest

from archive_pipelines.replay.memento import (
    Memento,
    Neighbours,
    Paths,
    http_date,
    link_header,
    parse_http_date,
    timemap_json,
    timemap_link,
)
from archive_pipelines.replay.wayback_paths import timestamp_ms
from tests.helpers.memento_links import parse_links

pytestmark = pytest.mark.unit

ORIGINAL = "http://a.example.org"
PATHS = Paths("http://arxiv.example.net")
# RFC 7089 5.1.1: the first, last and one other memento of the example TimeMap.
RFC_MEMENTOS = [("20000620180259", "Tue, 20 Jun 2000 18:02:59 GMT"),
                ("20000621011731", "Wed, 21 Jun 2000 01:17:31 GMT"),
                ("20091027204954", "Tue, 27 Oct 2009 20:49:54 GMT")]
def mementos() -> list[Memento]:
    return [Memento(ORIGINAL, timestamp_ms(ts)) for ts, _date in RFC_MEMENTOS]


def test_http_dates_are_rfc_1123_as_in_the_rfc_examples() -> None:
    for ts, date in RFC_MEMENTOS:
        assert http_date(timestamp_ms(ts)) == date
        assert parse_http_date(date) == timestamp_ms(ts)
    assert parse_http_date("yesterday") is None


def test_a_link_format_timemap_as_rfc_7089_shows_it() -> None:
    links = parse_links(timemap_link(ORIGINAL, mementos(), PATHS))
    assert links[0] == (ORIGINAL, {"rel": "original"})
    assert links[1] == (f"{PATHS.base}/web/{ORIGINAL}", {"rel": "timegate"})
    assert links[2] == (f"{PATHS.base}/timemap/link/{ORIGINAL}", {
        "rel": "self", "type": "application/link-format",
        "from": "Tue, 20 Jun 2000 18:02:59 GMT", "until": "Tue, 27 Oct 2009 20:49:54 GMT"})
    assert links[3:] == [
        (f"{PATHS.base}/web/20000620180259/{ORIGINAL}",
         {"rel": "first memento", "datetime": "Tue, 20 Jun 2000 18:02:59 GMT"}),
        (f"{PATHS.base}/web/20000621011731/{ORIGINAL}",
         {"rel": "memento", "datetime": "Wed, 21 Jun 2000 01:17:31 GMT"}),
        (f"{PATHS.base}/web/20091027204954/{ORIGINAL}",
         {"rel": "last memento", "datetime": "Tue, 27 Oct 2009 20:49:54 GMT"}),
    ]


def test_a_single_memento_is_first_and_last() -> None:
    links = parse_links(timemap_link(ORIGINAL, mementos()[:1], PATHS))
    assert links[3][1]["rel"] == "first last memento"


def test_a_mementos_link_header_names_its_neighbours() -> None:
    first, middle, last = mementos()
    header = link_header(ORIGINAL, PATHS, memento=middle, neighbours=Neighbours(
        first=first, prev=first, next=last, last=last))
    links = parse_links(header)
    assert [link[1]["rel"] for link in links] == [
        "original", "timegate", "timemap", "first prev memento", "memento", "next last memento"]
    assert links[4] == (f"{PATHS.base}/web/20000621011731/{ORIGINAL}",
                        {"rel": "memento", "datetime": "Wed, 21 Jun 2000 01:17:31 GMT"})


def test_a_timemap_as_json_lists_the_mementos_oldest_first() -> None:
    body = json.loads(timemap_json(ORIGINAL, mementos(), PATHS))
    assert body["original_uri"] == ORIGINAL
    assert [m["datetime"] for m in body["mementos"]["list"]] == [
        "2000-06-20T18:02:59Z", "2000-06-21T01:17:31Z", "2009-10-27T20:49:54Z"]
    assert body["mementos"]["first"]["uri"] == f"{PATHS.base}/web/20000620180259/{ORIGINAL}"
    assert body["mementos"]["last"]["uri"] == f"{PATHS.base}/web/20091027204954/{ORIGINAL}"


def test_the_only_memento_is_its_own_first_and_last() -> None:
    only = mementos()[0]
    header = link_header(ORIGINAL, PATHS, memento=only, neighbours=Neighbours(first=only, last=only))
    assert [link[1]["rel"] for link in parse_links(header)] == [
        "original", "timegate", "timemap", "first last memento"]


def test_uris_in_headers_are_ascii_and_keep_their_escapes() -> None:
    odd = Memento("http://a.example.org/caf\u00e9 menu?q=\"x\"&r=%20", timestamp_ms("2000"))
    header = link_header(odd.url, Paths(), memento=odd, neighbours=Neighbours())
    assert header.isascii()
    assert all(" " not in uri and '"' not in uri for uri in re.findall(r"<([^>]*)>", header))
    assert "/caf%C3%A9%20menu?q=%22x%22&r=%20" in header
