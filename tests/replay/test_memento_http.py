"""Memento over HTTP (RFC 7089): the TimeGate's 302 with Vary and Link, TimeMaps in link
format and JSON; calendars and prefix lists; the Referer fallback; health and metrics."""

from __future__ import annotations

import json

from archive_pipelines.catalog import Catalog
from archive_pipelines.replay.memento import http_date
from archive_pipelines.replay.timestamps import timestamp_of
from tests.helpers.memento_links import parse_links
from tests.helpers.replay import GALLERY_URL, HOST, RunningReplay, captures_of, fetch, memento_path


def test_the_timegate_sends_to_the_memento_nearest_accept_datetime(
        replay: RunningReplay, replay_catalog: Catalog) -> None:
    first, second = captures_of(replay_catalog, GALLERY_URL)
    for asked, expected in ((http_date(first.fetched_ms - 86_400_000), first),
                            (http_date(first.fetched_ms), first),
                            (http_date(second.fetched_ms + 86_400_000), second)):
        answer = fetch(replay.port, f"/web/{GALLERY_URL}", headers={"Accept-Datetime": asked})
        assert answer.status == 302, answer.text
        assert answer.header("Location") == memento_path(expected)
        assert answer.header("Vary") == "accept-datetime"
        links = parse_links(answer.header("Link") or "")
        rels = {link[1]["rel"]: link[0] for link in links}
        assert rels["original"] == GALLERY_URL
        assert rels["timemap"] == f"/timemap/link/{GALLERY_URL}"
        firsts = [uri for uri, params in links if "first" in params["rel"].split()]
        lasts = [uri for uri, params in links if "last" in params["rel"].split()]
        assert firsts == [memento_path(first)] and lasts == [memento_path(second)]
    latest = fetch(replay.port, f"/web/{GALLERY_URL}")
    assert latest.status == 302 and latest.header("Location") == memento_path(second)
    bad = fetch(replay.port, f"/web/{GALLERY_URL}", headers={"Accept-Datetime": "last week"})
    assert bad.status == 400 and "Accept-Datetime" in bad.text


def test_timemaps_list_every_memento_oldest_first(replay: RunningReplay,
                                                  replay_catalog: Catalog) -> None:
    captures = captures_of(replay_catalog, GALLERY_URL)
    answer = fetch(replay.port, f"/timemap/link/{GALLERY_URL}")
    assert answer.status == 200
    assert (answer.header("Content-Type") or "").startswith("application/link-format")
    links = parse_links(answer.text)
    assert links[0] == (GALLERY_URL, {"rel": "original"})
    assert links[2][1]["from"] == http_date(captures[0].fetched_ms)
    assert links[2][1]["until"] == http_date(captures[-1].fetched_ms)
    assert [(uri, params["datetime"]) for uri, params in links[3:]] == [
        (memento_path(c), http_date(c.fetched_ms)) for c in captures]
    as_json = json.loads(fetch(replay.port, f"/timemap/json/{GALLERY_URL}").body)
    assert [m["uri"] for m in as_json["mementos"]["list"]] == [memento_path(c) for c in captures]
    missing = fetch(replay.port, f"/timemap/link/http://{HOST}/nothing-here")
    assert missing.status == 404


def test_the_calendar_lists_every_capture_by_year_and_month(replay: RunningReplay,
                                                            replay_catalog: Catalog) -> None:
    captures = captures_of(replay_catalog, GALLERY_URL)
    page = fetch(replay.port, f"/web/*/{GALLERY_URL}")
    assert page.status == 200
    for capture in captures:
        assert f'href="{memento_path(capture)}"' in page.text
    month = timestamp_of(captures[0].fetched_ms)
    assert f"<h2>{month[:4]}</h2>" in page.text and f"{month[:4]}-{month[4:6]}" in page.text
    listed = json.loads(fetch(replay.port, f"/web/*/{GALLERY_URL}?output=json").body)
    assert [c["timestamp"] for c in listed["captures"]] == [
        timestamp_of(c.fetched_ms) for c in captures]
    assert listed["captures"][0]["digest"] == captures[0].body_sha256


def test_a_prefix_lists_the_urls_under_it(replay: RunningReplay) -> None:
    listed = json.loads(fetch(replay.port, f"/web/*/http://{HOST}/assets/css/*?output=json").body)
    urls = {c["url"] for c in listed["captures"]}
    assert f"http://{HOST}/assets/css/main.css" in urls
    assert all(url.startswith(f"http://{HOST}/assets/css") for url in urls)
    page = fetch(replay.port, f"/web/*/http://{HOST}/assets/css/*")
    assert page.status == 200 and f'href="/web/*/http://{HOST}/assets/css/main.css"' in page.text


def test_a_root_relative_request_from_a_replayed_page_goes_to_its_capture(
        replay: RunningReplay, replay_catalog: Catalog) -> None:
    first = captures_of(replay_catalog, GALLERY_URL)[0]
    timestamp = timestamp_of(first.fetched_ms)
    referer = f"http://127.0.0.1:{replay.port}{memento_path(first)}"
    answer = fetch(replay.port, "/static/site.css?v=2", headers={"Referer": referer})
    assert answer.status == 302
    assert answer.header("Location") == f"/web/{timestamp}/http://{HOST}/static/site.css?v=2"
    # Without a Referer from this server: a 404 page, not a guess.
    other = fetch(replay.port, "/static/site.css",
                  headers={"Referer": f"http://elsewhere.example{memento_path(first)}"})
    assert other.status == 404


def test_health_and_metrics(replay: RunningReplay) -> None:
    fetch(replay.port, f"/web/2/{GALLERY_URL}")
    health = json.loads(fetch(replay.port, "/healthz").body)
    assert health["status"] == "ok" and health["requests"] >= 1
    metrics = fetch(replay.port, "/metrics").text
    assert "# TYPE replay_requests_total counter" in metrics
    requests = int(next(line.split()[1] for line in metrics.splitlines()
                        if line.startswith("replay_requests_total ")))
    assert requests >= health["requests"] + 1
    assert "replay_body_cache_bytes " in metrics
