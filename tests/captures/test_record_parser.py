"""One crawl record -> its captures; a record with any bad field is refused with the field named.

The records are the crawler's own (read from a real crawl's segments), changed one field at
a time for the refusals."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from archive_pipelines.captures.record_parser import RecordRefused, parse_record, url_key
from tests.helpers.crawls import Crawled

Record = dict[str, Any]


def crawled_records(crawled: Crawled) -> tuple[str, list[Record]]:
    """(session id, every record) of the crawl's segments."""
    records: list[Record] = []
    for path in sorted(crawled.data_dir.glob("sessions/*/*/*.jsonl")):
        records.extend(json.loads(line) for line in path.read_bytes().splitlines() if line)
    assert records
    return crawled.report.session_id, records


def pick(crawled: Crawled, wanted: Callable[[Record], bool]) -> tuple[str, Record]:
    session_id, records = crawled_records(crawled)
    found = next((r for r in records if wanted(r)), None)
    assert found is not None, "the crawl has no such record"
    return session_id, copy.deepcopy(found)


def fetched_ok(record: Record) -> bool:
    return bool(record["requests"]) and (record["requests"][0].get("response") or {}).get(
        "status_code") == 200


def line_of(record: object) -> bytes:
    return json.dumps(record).encode()


def test_a_fetched_page_is_one_page_capture_with_its_body(crawled: Crawled) -> None:
    session_id, record = pick(crawled, fetched_ok)
    parsed = parse_record(line_of(record), session_id=session_id)
    response = record["requests"][0]["response"]
    assert parsed.session_id == session_id
    assert parsed.fetched_ms == round(record["timestamp"] * 1000)
    [capture] = parsed.captures
    key = url_key(record["page_url"])
    assert key is not None
    assert (capture.kind, capture.url, capture.canonical_url, capture.url_hash, capture.site) == (
        "page", record["page_url"], *key)
    assert capture.status_code == 200 and capture.error is None
    assert capture.body_sha256 == response["body_hash"].removeprefix("sha256:")
    assert capture.body_size == response["body_size"]
    assert capture.content_type == response["body_type"]
    assert capture.final_url == record["final_url"]
    assert capture.depth == record["depth"] and capture.request_index == 0
    assert capture.redirects is None and not capture.truncated


def test_a_redirect_is_a_hop_capture_pointing_at_its_location(crawled: Crawled) -> None:
    session_id, record = pick(crawled, lambda r: bool(r["requests"] and r["requests"][0]["redirects"]))
    hops = record["requests"][0]["redirects"]
    parsed = parse_record(line_of(record), session_id=session_id)
    redirects = [c for c in parsed.captures if c.kind == "redirect"]
    assert [(c.url, c.status_code, c.final_url) for c in redirects] == [
        (h["url"], h["status"], h["location"]) for h in hops]
    [page] = [c for c in parsed.captures if c.kind == "page"]
    assert page.status_code == record["requests"][0]["response"]["status_code"]
    assert page.status_code is not None and 300 <= page.status_code < 400
    assert json.loads(page.redirects or "null") == [
        [h["url"], h["status"], h["location"]] for h in hops]


def test_a_page_robots_txt_kept_the_crawler_from_is_a_failed_capture(crawled: Crawled) -> None:
    session_id, record = pick(crawled, lambda r: not r["requests"])
    [capture] = parse_record(line_of(record), session_id=session_id).captures
    assert capture.kind == "page" and capture.status_code is None
    assert capture.error == record["error"] and capture.body_sha256 is None


def test_sub_requests_are_request_captures_in_order(crawled: Crawled) -> None:
    session_id, record = pick(crawled, fetched_ok)
    asset = copy.deepcopy(record["requests"][0])
    asset["url"] = record["page_url"].rstrip("/") + "/style.css?v=2"
    asset["response"]["body_truncated"] = True
    failed = {"url": record["page_url"].rstrip("/") + "/gone.js", "redirects": [],
              "response": None, "error": "connection reset"}
    record["requests"] += [asset, failed]
    captures = parse_record(line_of(record), session_id=session_id).captures
    assert [(c.kind, c.request_index) for c in captures] == [
        ("page", 0), ("request", 1), ("request", 2)]
    assert captures[1].truncated and captures[1].depth is None
    assert captures[1].final_url == asset["url"]  # the record's final_url is the page's
    assert captures[2].status_code is None and captures[2].error == "connection reset"


def _set(path: str, value: object) -> Callable[[Record], None]:
    """A change of one field, by a dotted path (`requests.0.response.status_code`)."""
    def change(record: Record) -> None:
        *parents, last = path.split(".")
        target: Any = record
        for part in parents:
            target = target[int(part)] if part.isdigit() else target[part]
        target[int(last) if last.isdigit() else last] = value
    return change


# (change, words the refusal must contain: the field and what is wrong with it)
REFUSALS = {
    "path-like session id": (_set("session_id", "../../../etc"), ["session_id", "../../../etc"]),
    "100 KB page URL": (_set("page_url", "http://site0000.test/" + "a" * 100_000),
                        ["page_url", "at most"]),
    "100 KB request URL": (_set("requests.0.url", "http://site0000.test/" + "a" * 100_000),
                           ["requests[0].url", "at most"]),
    "status abc": (_set("requests.0.response.status_code", "abc"),
                   ["requests[0].response.status_code", "'abc'", "HTTP status"]),
    "status true": (_set("requests.0.response.status_code", True),
                    ["requests[0].response.status_code"]),
    "status 999": (_set("requests.0.response.status_code", 999),
                   ["requests[0].response.status_code", "999"]),
    "body hash not sha256": (_set("requests.0.response.body_hash", "md5:abc"),
                             ["requests[0].response.body_hash", "md5:abc"]),
    "body hash a path": (_set("requests.0.response.body_hash", "sha256:../../etc/passwd"),
                         ["requests[0].response.body_hash"]),
    "negative size": (_set("requests.0.response.body_size", -1),
                      ["requests[0].response.body_size"]),
    "truncated yes": (_set("requests.0.response.body_truncated", "yes"),
                      ["requests[0].response.body_truncated"]),
    "file URL": (_set("page_url", "file:///etc/passwd"), ["page_url", "file:///etc/passwd"]),
    "timestamp 1970": (_set("timestamp", 1), ["timestamp", "1990"]),
    "timestamp text": (_set("timestamp", "yesterday"), ["timestamp"]),
    "negative depth": (_set("depth", -3), ["depth", "-3"]),
    "requests not a list": (_set("requests", {"0": {}}), ["requests is not a list"]),
    "request not an object": (_set("requests.0", "GET /"), ["requests[0]", "not an object"]),
    "hop status": (_set("requests.0.redirects", [{"url": "http://site0000.test/a", "status": "x"}]),
                   ["requests[0].redirects[0].status"]),
    "long error": (_set("error", "x" * 10_000), ["error", "at most"]),
    "long title": (_set("title", "x" * 1_001), ["title", "at most 1000"]),
    "title a number": (_set("title", 42), ["title", "not a string"]),
    "title with NUL": (_set("title", "a\x00b"), ["title", "NUL"]),
}


@pytest.mark.parametrize("name", REFUSALS)
def test_a_bad_field_refuses_the_record_naming_the_field(crawled: Crawled, name: str) -> None:
    change, words = REFUSALS[name]
    session_id, record = pick(crawled, fetched_ok)
    change(record)
    with pytest.raises(RecordRefused) as refused:
        parse_record(line_of(record), session_id=session_id)
    message = str(refused.value)
    assert all(word in message for word in words), message
    assert len(message) < 400  # a line for a report, not the 100 KB value


@pytest.mark.parametrize(("line", "words"), [
    (b"{not json", "not a JSON record"),
    (b'["session_id", "page_url"]', "not a JSON object"),
    (b"\xff\xfe\x00garbage", "not a JSON record"),
    (b'{"session_id": null}', "session_id None"),
])
def test_a_line_that_is_no_record_is_refused(crawled: Crawled, line: bytes, words: str) -> None:
    with pytest.raises(RecordRefused, match=words):
        parse_record(line, session_id=crawled.report.session_id)


def test_nan_timestamp_is_refused(crawled: Crawled) -> None:
    session_id, record = pick(crawled, fetched_ok)
    text = line_of(record).replace(f'"timestamp": {record["timestamp"]}'.encode(),
                                   b'"timestamp": NaN', 1)
    assert b"NaN" in text
    with pytest.raises(RecordRefused, match="timestamp nan"):
        parse_record(text, session_id=session_id)


@pytest.mark.unit
def test_url_key_is_the_crawlers_canonical_form() -> None:
    spelled = url_key("HTTP://Site0001.TEST:80/a/./b/../p.html?b=1&a=2#frag")
    plain = url_key("http://site0001.test/a/p.html?a=2&b=1")
    assert spelled == plain
    assert plain is not None and plain[0] == "http://site0001.test/a/p.html?a=2&b=1"
    assert plain[2] == "http://site0001.test"
    secure = url_key("https://site0001.test/a/p.html?a=2&b=1")
    assert secure is not None and secure[1] != plain[1] and secure[2] == "https://site0001.test"
    with_port = url_key("http://site0001.test:8080/")
    assert with_port is not None and with_port[2] == "http://site0001.test:8080"
    for bad in ("ftp://site0001.test/", "site0001.test/a", "http:///nohost", "", "javascript:x"):
        assert url_key(bad) is None, bad


@pytest.mark.unit
def test_credentials_in_an_older_records_urls_are_never_ingested() -> None:
    """A record whose URLs carry `user:password@` (older crawlers wrote them): its captures
    hold the URLs without them, and are the captures of the same pages."""
    secret = "s3cr3t-pw"
    record = {
        "session_id": "s1", "page_url": f"http://user:{secret}@site0001.test/a", "timestamp": 1.7e9,
        "navigation_id": "n1", "depth": 0, "final_url": f"http://user:{secret}@site0001.test/b",
        "error": None,
        "requests": [{
            "url": f"http://user:{secret}@site0001.test/b", "timestamp": 1.7e9,
            "response": {"status_code": 200, "body_hash": None, "body_size": 0},
            "redirects": [{"url": f"http://user:{secret}@site0001.test/a", "status": 302,
                           "location": f"http://user:{secret}@site0001.test/b"}]}],
    }
    parsed = parse_record(line_of(record), session_id="s1")
    assert secret not in repr(parsed)
    hop, page = parsed.captures
    assert (hop.kind, hop.url, hop.final_url) == (
        "redirect", "http://site0001.test/a", "http://site0001.test/b")
    assert (page.kind, page.url, page.final_url) == (
        "page", "http://site0001.test/b", "http://site0001.test/b")
    assert json.loads(page.redirects or "") == [
        ["http://site0001.test/a", 302, "http://site0001.test/b"]]
    assert page.url_hash == (url_key("http://site0001.test/b") or ("", ""))[1]
    not_fetched = {**record, "requests": []}
    [skipped] = parse_record(line_of(not_fetched), session_id="s1").captures
    assert skipped.url == "http://site0001.test/a" and secret not in repr(skipped)


def titled_record(**changes: object) -> Record:
    """A page record (a redirect hop, the page, one sub-request) with the crawler's fields."""
    record: Record = {
        "session_id": "s1", "page_url": "http://site0001.test/a", "timestamp": 1.7e9,
        "navigation_id": "n1", "depth": 0, "final_url": "http://site0001.test/b", "error": None,
        "title": "B\u00fccher \u2014 Katalog",
        "requests": [
            {"url": "http://site0001.test/b", "timestamp": 1.7e9,
             "response": {"status_code": 200, "body_hash": None, "body_size": 0},
             "redirects": [{"url": "http://site0001.test/a", "status": 301,
                            "location": "http://site0001.test/b"}]},
            {"url": "http://site0001.test/s.css", "timestamp": 1.7e9,
             "response": {"status_code": 200, "body_hash": None, "body_size": 0}}],
    }
    record.update(changes)
    return record


@pytest.mark.unit
def test_a_title_goes_onto_the_page_capture_only() -> None:
    hop, page, asset = parse_record(line_of(titled_record()), session_id="s1").captures
    assert (hop.kind, page.kind, asset.kind) == ("redirect", "page", "request")
    assert page.title == "B\u00fccher \u2014 Katalog" and page.request_index == 0
    assert hop.title is None and asset.title is None
    longest = "\u00fc" * 1_000  # the limit counts characters, not bytes
    [_hop, page, _asset] = parse_record(line_of(titled_record(title=longest)),
                                        session_id="s1").captures
    assert page.title == longest
    [skipped] = parse_record(line_of(titled_record(requests=[])), session_id="s1").captures
    assert skipped.kind == "page" and skipped.title == "B\u00fccher \u2014 Katalog"


@pytest.mark.unit
@pytest.mark.parametrize("record", [
    titled_record(title=None),
    {k: v for k, v in titled_record().items() if k != "title"},  # written before titles were kept
], ids=["null", "absent"])
def test_a_record_without_a_title_gives_none(record: Record) -> None:
    captures = parse_record(line_of(record), session_id="s1").captures
    assert [c.kind for c in captures] == ["redirect", "page", "request"]
    assert [c.title for c in captures] == [None, None, None]


@pytest.mark.unit
@pytest.mark.parametrize(("title", "words"), [
    ("x" * 1_001, "title is not a string of at most 1000 characters"),
    (["a list"], "title is not a string"),
    (7, "title is not a string"),
    (True, "title is not a string"),
    ({"text": "x"}, "title is not a string"),
    ("a\x00b", "title holds a NUL"),
    ("a\ud800b", "unpaired surrogate"),
])
def test_a_bad_title_refuses_the_record(title: object, words: str) -> None:
    with pytest.raises(RecordRefused, match=words):
        parse_record(line_of(titled_record(title=title)), session_id="s1")
