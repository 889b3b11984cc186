"""`answer_cdx` over a catalog (SQLite and PostgreSQL): every parameter, both dialects, both
JSON forms, paging to the end, exclusions."""

from __future__ import annotations

import base64
import hashlib
import json
from urllib.parse import parse_qs

import pytest

from archive_pipelines.catalog import Catalog
from archive_pipelines.replay.cdx_answer import CdxAnswer, answer_cdx
from archive_pipelines.replay.exclusions import Exclusions
from archive_pipelines.replay.timestamps import start_ms
from archive_testkit.recorded_captures import Fetch, record_fetches

HOME = b"<html>home</html>"
NONE = Exclusions()


def _digest(body: bytes) -> str:
    return "sha256:" + base64.b32encode(hashlib.sha256(body).digest()).decode()


CAPTURES = [
    Fetch("http://example.com/", start_ms("20250101000000"), body=HOME),
    Fetch("http://example.com/", start_ms("20260101000000"), body=HOME),
    Fetch("https://www.example.com/", start_ms("20260601000000"), body=b"<html>new</html>",
          content_type="text/html; charset=UTF-8"),
    Fetch("http://example.com/a", start_ms("20250601000000"), body=b"a", content_type="text/plain"),
    Fetch("http://example.com/a/b", start_ms("20250701000000"), status=404, body=b"gone"),
    Fetch("http://example.com/b", start_ms("20250801000000"), status=301, body=None, kind="redirect",
          location="http://example.com/a", content_type=None),
    Fetch("http://sub.example.com/", start_ms("20250901000000"), body=b"sub"),
    Fetch("http://example.org/", start_ms("20251001000000"), body=b"org"),
    Fetch("http://example.com/private/x", start_ms("20251101000000"), body=b"secret"),
    Fetch("http://example.com/c", start_ms("20251201000000"), status=None, body=None),  # failed
]


@pytest.fixture
def cdx(catalog: Catalog) -> Catalog:
    record_fetches(catalog, CAPTURES)
    return catalog


def _ask(catalog: Catalog, query: str, *, dialect: str = "ia",
         exclusions: Exclusions = NONE) -> CdxAnswer:
    return answer_cdx(parse_qs(query, keep_blank_values=True), catalog=catalog,
                      dialect=dialect, exclusions=exclusions)  # type: ignore[arg-type]


def _text(answer: CdxAnswer) -> list[list[str]]:
    assert (answer.status, answer.content_type) == (200, "text/plain; charset=utf-8"), answer.body
    return [line.split(" ") for line in answer.body.decode().splitlines()]


def _column(answer: CdxAnswer, index: int) -> list[str]:
    return [fields[index] for fields in _text(answer)]


def test_an_exact_url_in_the_internet_archive_dialect(cdx: Catalog) -> None:
    answer = _ask(cdx, "url=example.com/")
    assert _text(answer) == [
        ["com,example)/", "20250101000000", "http://example.com/", "text/html", "200", _digest(HOME),
         str(len(HOME))],
        ["com,example)/", "20260101000000", "http://example.com/", "text/html", "200", _digest(HOME),
         str(len(HOME))],
        ["com,example)/", "20260601000000", "https://www.example.com/", "text/html", "200",
         _digest(b"<html>new</html>"), "16"],
    ]
    redirect = _text(_ask(cdx, "url=http://example.com/b&fl=statuscode,mimetype,digest,length,redirect"))
    assert redirect == [["301", "unk", "-", "-", "http://example.com/a"]]


def test_both_json_forms_and_pywb_names(cdx: Catalog) -> None:
    ia = _ask(cdx, "url=example.com/a&output=json")
    assert ia.content_type == "application/json"
    assert json.loads(ia.body) == [
        ["urlkey", "timestamp", "original", "mimetype", "statuscode", "digest", "length"],
        ["com,example)/a", "20250601000000", "http://example.com/a", "text/plain", "200", _digest(b"a"), "1"]]
    assert json.loads(_ask(cdx, "url=example.com/nothing&output=json").body) == []
    pywb = _ask(cdx, "url=example.com/a&output=json", dialect="pywb")
    assert pywb.content_type == "text/x-ndjson"
    assert [json.loads(line) for line in pywb.body.splitlines()] == [
        {"urlkey": "com,example)/a", "timestamp": "20250601000000", "url": "http://example.com/a",
         "mime": "text/plain", "status": "200", "digest": _digest(b"a"), "length": "1"}]
    named = _ask(cdx, "url=example.com/a&output=json&fl=url,mime,status", dialect="pywb")
    assert json.loads(named.body) == {"url": "http://example.com/a", "mime": "text/plain", "status": "200"}
    assert _text(_ask(cdx, "url=example.com/a&fl=original,mime,status")) == [
        ["http://example.com/a", "text/plain", "200"]]


def test_pywb_text_lines_are_cdxj_and_no_match_is_404(cdx: Catalog) -> None:
    answer = _ask(cdx, "url=example.com/b", dialect="pywb")
    key, timestamp, rest = answer.body.decode().rstrip("\n").split(" ", 2)
    assert (key, timestamp) == ("com,example)/b", "20250801000000")
    assert json.loads(rest) == {"url": "http://example.com/b", "status": "301"}  # "-" values left out
    missing = _ask(cdx, "url=example.com/nothing", dialect="pywb")
    assert (missing.status, missing.body) == (404, b"No Captures found for: example.com/nothing\n")
    assert _ask(cdx, "url=example.com/nothing").body == b""  # ia: 200, no lines


@pytest.mark.parametrize(("query", "urls"), [
    ("url=example.com/*", ["http://example.com/", "http://example.com/", "https://www.example.com/",
                           "http://example.com/a", "http://example.com/a/b", "http://example.com/b",
                           "http://example.com/private/x"]),
    ("url=example.com/a*", ["http://example.com/a", "http://example.com/a/b"]),
    ("url=example.com/a/&matchType=prefix", ["http://example.com/a/b"]),
    ("url=example.com/a&matchType=host", ["http://example.com/", "http://example.com/",
                                          "https://www.example.com/", "http://example.com/a",
                                          "http://example.com/a/b", "http://example.com/b",
                                          "http://example.com/private/x"]),
    ("url=*.example.com&fl=original&collapse=urlkey",
     ["http://example.com/", "http://example.com/a", "http://example.com/a/b", "http://example.com/b",
      "http://example.com/private/x", "http://sub.example.com/"]),
    ("url=example.com/c", []),  # a failed fetch is no capture
])
def test_match_types_cover_their_surt_ranges_in_surt_order(cdx: Catalog, query: str,
                                                          urls: list[str]) -> None:
    index = 0 if "fl=original" in query else 2
    assert _column(_ask(cdx, query), index) == urls


def test_time_windows_limits_and_sorting(cdx: Catalog) -> None:
    def times(query: str) -> list[str]:
        return _column(_ask(cdx, query), 1)

    assert times("url=example.com/&from=2026") == ["20260101000000", "20260601000000"]
    assert times("url=example.com/&to=2025") == ["20250101000000"]
    assert times("url=example.com/&from=202512&to=20260101") == ["20260101000000"]
    assert times("url=example.com/&limit=2") == ["20250101000000", "20260101000000"]
    assert times("url=example.com/&limit=-2") == ["20260101000000", "20260601000000"]
    assert times("url=example.com/&sort=reverse") == ["20260601000000", "20260101000000",
                                                      "20250101000000"]
    assert times("url=example.com/&sort=reverse&limit=-1") == ["20250101000000"]
    assert times("url=example.com/&sort=closest&closest=20251001") == [  # 92, 243, 273 days off
        "20260101000000", "20260601000000", "20250101000000"]
    assert times("url=example.com/&sort=closest&closest=20260315&limit=2") == [
        "20260101000000", "20260601000000"]
    assert _column(_ask(cdx, "url=example.com/*&sort=reverse&limit=2"), 2) == [
        "http://example.com/private/x", "http://example.com/b"]


def test_filters_collapse_and_dupe_counts(cdx: Catalog) -> None:
    def urls(query: str, dialect: str = "ia") -> list[str]:
        return _column(_ask(cdx, query + "&fl=original", dialect=dialect), 0)

    assert urls("url=example.com/*&filter=statuscode:200&filter=!~original:private") == [
        "http://example.com/", "http://example.com/", "https://www.example.com/", "http://example.com/a"]
    assert urls("url=example.com/*&filter=!statuscode:2..") == ["http://example.com/a/b",
                                                               "http://example.com/b"]
    assert urls("url=example.com/*&filter==mimetype:text/plain") == ["http://example.com/a"]
    assert urls("url=example.com/*&filter=original:http://example.com/a") == ["http://example.com/a"]
    assert urls("url=example.com/*&filter=url:http://example.com/a", dialect="pywb") == [
        "http://example.com/a", "http://example.com/a/b"]  # pywb's regex: from the start only
    assert urls("url=example.com/*&collapse=digest") == [
        "http://example.com/", "https://www.example.com/", "http://example.com/a", "http://example.com/a/b",
        "http://example.com/b", "http://example.com/private/x"]
    assert urls("url=example.com/*&collapse=timestamp:4") == [  # runs of the same year
        "http://example.com/", "http://example.com/", "http://example.com/a"]
    dupes = _text(_ask(cdx, "url=example.com/&fl=timestamp,digest&showDupeCount=true"))
    assert [row[2] for row in dupes] == ["0", "1", "0"]
    header = json.loads(_ask(cdx, "url=example.com/&output=json&showDupeCount=true").body)[0]
    assert header[-1] == "dupecount"


def test_pages_walk_to_the_end_then_400(cdx: Catalog) -> None:
    everything = _text(_ask(cdx, "url=example.com&matchType=domain"))
    assert len(everything) == 8
    assert _ask(cdx, "url=*.example.com&showNumPages=true&pageSize=3").body == b"3\n"
    assert _ask(cdx, "url=*.example.com&showNumPages=true&pageSize=3&output=json",
                dialect="pywb").body == b'{"blocks": 3, "pages": 3, "pageSize": 3}\n'
    walked, page = [], 0
    while (answer := _ask(cdx, f"url=*.example.com&pageSize=3&page={page}")).status == 200:
        walked += _text(answer)
        page += 1
    assert walked == everything and page == 3
    assert answer.status == 400 and b"page 3 is past the last page (3 pages of 3" in answer.body
    assert _ask(cdx, "url=example.com/nothing&page=0").status == 200  # an empty first page
    assert _ask(cdx, "url=example.com/nothing&page=1").status == 400


def test_withdrawn_prefixes_are_never_answered(cdx: Catalog) -> None:
    withdrawn = Exclusions(["http://example.com/private/", "example.com/a"])
    urls = _column(_ask(cdx, "url=example.com/*", exclusions=withdrawn), 2)
    assert urls == ["http://example.com/", "http://example.com/", "https://www.example.com/",
                    "http://example.com/b"]
    urls = _column(_ask(cdx, "url=example.com/*&sort=reverse", exclusions=withdrawn), 2)
    assert urls == ["http://example.com/b", "https://www.example.com/", "http://example.com/",
                    "http://example.com/"]
    assert _ask(cdx, "url=example.com/private/x", exclusions=withdrawn).body == b""
    assert _ask(cdx, "url=example.com/private/x", dialect="pywb", exclusions=withdrawn).status == 404
    paged = _ask(cdx, "url=example.com/*&page=0&pageSize=100", exclusions=withdrawn)
    assert [row[2] for row in _text(paged)] == urls[::-1]


def test_scans_resume_past_withdrawn_prefixes_and_filtered_rows(catalog: Catalog) -> None:
    base = start_ms("20260101")
    record_fetches(catalog, [Fetch(f"http://example.com/m/{n:04d}", base + n) for n in range(450)]
                   + [Fetch(f"http://example.com/z/{n}", base + n) for n in range(3)]
                   + [Fetch(f"http://example.com/a/{n}", base + n) for n in range(3)])
    withdrawn = Exclusions(["example.com/m/"])
    forward = _column(_ask(catalog, "url=example.com/*&limit=4", exclusions=withdrawn), 2)
    assert forward == [f"http://example.com/a/{n}" for n in range(3)] + ["http://example.com/z/0"]
    backward = _column(_ask(catalog, "url=example.com/*&limit=4&sort=reverse", exclusions=withdrawn), 2)
    assert backward == [f"http://example.com/z/{n}" for n in (2, 1, 0)] + ["http://example.com/a/2"]
    # A filter that passes one line in hundreds: the scan reads on, in growing pages.
    rare = _column(_ask(catalog, "url=example.com/*&limit=3&filter=original:.*(0007|0449|z/1)"), 2)
    assert rare == ["http://example.com/m/0007", "http://example.com/m/0449", "http://example.com/z/1"]
    assert len(_text(_ask(catalog, "url=example.com/m/*&limit=-3"))) == 3


@pytest.mark.parametrize(("query", "reason"), [
    ("matchType=prefix", b"url is required"),
    ("url=example.com&limit=x", b"limit 'x' is not a whole number"),
    ("url=example.com&filter=bogus:1", b"unknown field 'bogus'"),
])
def test_bad_requests_are_400_with_the_reason(cdx: Catalog, query: str, reason: bytes) -> None:
    for dialect in ("ia", "pywb"):
        answer = _ask(cdx, query, dialect=dialect)
        assert (answer.status, answer.content_type) == (400, "text/plain; charset=utf-8")
        assert reason in answer.body


def test_prefixes_longer_than_a_stored_key_still_match_exactly(catalog: Catalog) -> None:
    stem = "http://example.com/" + "p" * 1500
    urls = [stem + "/first", stem + "/second", stem + "/firstborn", "http://example.com/short"]
    record_fetches(catalog, [Fetch(url, start_ms("2026") + n) for n, url in enumerate(urls)])

    def found(query: str) -> list[str]:
        return sorted(_column(_ask(catalog, query + "&fl=original"), 0))

    assert found(f"url={stem}/first*") == sorted([stem + "/first", stem + "/firstborn"])
    assert found(f"url={stem}/second*") == [stem + "/second"]
    assert found(f"url={stem}*") == sorted(urls[:3])
    assert found(f"url={stem}/first") == [stem + "/first"]  # exact: the cut key and its hash
