"""CDX parameters -> CdxQuery, and the 400s with their reasons."""

from __future__ import annotations

import pytest

from archive_pipelines.catalog import KeyRange
from archive_pipelines.replay.cdx_query import (
    DEFAULT_LIMIT,
    MAX_LIMIT,
    CdxError,
    CdxQuery,
    parse_cdx_query,
)
from archive_pipelines.replay.timestamps import end_ms, start_ms
from archive_pipelines.surt import urlkey

pytestmark = pytest.mark.unit


def _query(dialect: str = "ia", **params: str | list[str]) -> CdxQuery:
    lists = {name: value if isinstance(value, list) else [value] for name, value in params.items()}
    return parse_cdx_query(lists, dialect=dialect)  # type: ignore[arg-type]


@pytest.mark.parametrize(("params", "match", "keys"), [
    ({"url": "example.com/page"}, "exact", KeyRange("com,example)/page")),
    ({"url": "http://www.Example.com/page/"}, "exact", KeyRange("com,example)/page")),
    ({"url": "example.com/page*"}, "prefix", KeyRange("com,example)/page", "com,example)/pagf")),
    ({"url": "example.com/dir/*"}, "prefix", KeyRange("com,example)/dir/", "com,example)/dir0")),
    ({"url": "example.com/dir/", "matchType": "prefix"}, "prefix",
     KeyRange("com,example)/dir/", "com,example)/dir0")),  # the slash kept, as pywb
    ({"url": "example.com/a", "matchType": "host"}, "host", KeyRange("com,example)", "com,example*")),
    ({"url": "*.example.com"}, "domain", KeyRange("com,example)", "com,example-")),
    ({"url": "example.com", "matchType": "domain"}, "domain", KeyRange("com,example)", "com,example-")),
    ({"url": "*.com"}, "domain", KeyRange("com)", "com-")),
    ({"url": "example.com/*", "matchType": "exact"}, "exact", KeyRange("com,example)/")),  # explicit wins
])
def test_the_url_and_match_type_give_a_surt_key_range(
        params: dict[str, str], match: str, keys: KeyRange) -> None:
    query = _query(**params)
    assert (query.match_type, query.keys, query.key_prefix) == (match, keys, None)


def test_a_long_prefix_ranges_over_what_stored_keys_keep_and_checks_the_rest() -> None:
    url = "example.com/" + "x" * 2000
    query = _query(url=url + "*")
    assert query.key_prefix is not None and query.key_prefix.startswith("com,example)/xxx")
    assert query.keys.start == urlkey(url)[:len(query.keys.start)]
    assert len(query.keys.start.encode()) < 1000 < len(query.key_prefix)


def test_the_defaults() -> None:
    query = _query(url="example.com")
    assert (query.limit, query.last, query.sort, query.from_ms, query.to_ms, query.page,
            query.page_size, query.json, query.filters, query.collapses) == (
        DEFAULT_LIMIT, False, "", None, None, None, 100, False, (), ())
    assert query.fields == ("urlkey", "timestamp", "original", "mimetype", "statuscode",
                            "digest", "length")


def test_every_parameter_is_read() -> None:
    query = _query(url="example.com/*", limit="-5", sort="reverse", **{"from": "2025", "to": "202603"},
                   filter=["!statuscode:200", "~url:a"], collapse=["timestamp:8", "digest"],
                   fl="url,mime,status,urlkey", output="JSON", showDupeCount="true", page="2",
                   pageSize="50")
    assert (query.limit, query.last, query.sort) == (5, True, "reverse")
    assert (query.from_ms, query.to_ms) == (start_ms("2025"), end_ms("202603"))
    assert [(f.field, f.mode, f.negated) for f in query.filters] == [
        ("statuscode", "", True), ("original", "~", False)]
    assert query.collapses == (("timestamp", 8), ("digest", None))
    assert query.fields == ("original", "mimetype", "statuscode", "urlkey") and query.fields_given
    assert (query.json, query.show_dupe_count, query.page, query.page_size) == (True, True, 2, 50)


def test_closest_sorting() -> None:
    query = _query(url="example.com/a", sort="closest", closest="20260101")
    assert (query.sort, query.closest_ms) == ("closest", start_ms("20260101"))


@pytest.mark.parametrize(("params", "reason"), [
    ({}, "url is required"),
    ({"url": "  "}, "url is required"),
    ({"url": "*"}, "only a wildcard"),
    ({"url": "example.com", "matchType": "everything"}, "matchType 'everything' is not"),
    ({"url": "urn:isbn:1*"}, "no host to match prefix"),
    ({"url": "example.com", "from": "2026-01"}, "1 to 14 digits"),
    ({"url": "example.com", "to": "202611271234567"}, "1 to 14 digits"),
    ({"url": "example.com", "limit": "ten"}, "not a whole number"),
    ({"url": "example.com", "limit": "0"}, "limit 0 asks for nothing"),
    ({"url": "example.com", "limit": str(MAX_LIMIT + 1)}, "not between"),
    ({"url": "example.com", "sort": "random"}, "not reverse or closest"),
    ({"url": "example.com", "sort": "closest"}, "needs closest="),
    ({"url": "example.com/*", "sort": "closest", "closest": "2026"}, "for an exact URL"),
    ({"url": "example.com", "closest": "2026x", "sort": "closest"}, "1 to 14 digits"),
    ({"url": "example.com", "filter": "statuscode"}, "is not [!][=|~]field:expression"),
    ({"url": "example.com", "filter": "colour:red"}, "unknown field 'colour'"),
    ({"url": "example.com", "filter": "url:(a+)+$"}, "repeat a repetition"),
    ({"url": "example.com", "filter": "url:(a|b)*c"}, None),  # a class to the parser: fine
    ({"url": "example.com", "filter": "url:(ab|cd)*e"}, "repeat an alternation"),
    ({"url": "example.com", "filter": "url:.*a.*b.*c"}, "more than 2 unbounded"),
    ({"url": "example.com", "filter": "url:[a"}, "not a regular expression"),
    ({"url": "example.com", "filter": "url:" + "a" * 301}, "at most 300 characters"),
    ({"url": "example.com", "collapse": "timestamp:x"}, "a number from 1"),
    ({"url": "example.com", "collapse": "size"}, "unknown field 'size'"),
    ({"url": "example.com", "fl": "url,,status"}, "unknown field ''"),
    ({"url": "example.com", "output": "xml"}, "not text or json"),
    ({"url": "example.com", "page": "-1"}, "not between"),
    ({"url": "example.com", "pageSize": "0"}, "not between"),
    ({"url": "example.com", "pageSize": "10001"}, "not between"),
    ({"url": "example.com", "callback": "f"}, "unknown parameter 'callback'"),
    ({"url": ["a.com", "b.com"]}, "url is given 2 times"),
    ({"url": "example.com/" + "a" * 9000}, "at most 8192 characters"),
    ({"url": "example.com/\x00"}, "without NUL"),
])
def test_malformed_parameters_are_400_with_the_reason(params: dict[str, str], reason: str | None) -> None:
    if reason is None:
        _query(**params)
        return
    with pytest.raises(CdxError, match=reason.replace("[", r"\[").replace("|", r"\|")
                       .replace("(", r"\(").replace("+", r"\+").replace("$", r"\$")) as raised:
        _query(**params)
    assert raised.value.status == 400
