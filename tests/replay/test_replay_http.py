"""Replay over HTTP on a real crawl: a page and its assets at their time with the bytes the
store holds, Memento headers, redirects to the exact timestamp, recorded redirects, ranges,
HEAD, neutralised headers, and the errors a person reads."""

from __future__ import annotations

import hashlib
import html
import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from archive_pipelines.catalog import Capture, Catalog
from archive_pipelines.replay.memento import http_date
from archive_pipelines.replay.timestamps import timestamp_of
from archive_pipelines.settings import ReplaySettings
from archive_pipelines.surt import urlkey
from archive_testkit.testweb.asset_pages import GALLERY_ASSETS, GALLERY_REDIRECTS
from tests.helpers.memento_links import parse_links
from tests.helpers.replay import (
    GALLERY_URL,
    HOST,
    Answer,
    RunningReplay,
    captures_of,
    fetch,
    make_replayer,
    memento_path,
    running_replay,
)


def test_the_gallery_replays_at_each_of_its_times_with_memento_headers(
        replay: RunningReplay, replay_catalog: Catalog) -> None:
    first, second = captures_of(replay_catalog, GALLERY_URL)
    assert timestamp_of(first.fetched_ms) != timestamp_of(second.fetched_ms)
    for capture, rels in ((first, ["first memento", "next last memento"]),
                          (second, ["first prev memento", "last memento"])):
        answer = fetch(replay.port, memento_path(capture))
        assert answer.status == 200, answer.text
        assert b"<title>Gallery</title>" in answer.body
        assert answer.header("Content-Type") == "text/html; charset=utf-8"  # as recorded
        assert answer.header("Memento-Datetime") == http_date(capture.fetched_ms)
        links = parse_links(answer.header("Link") or "")
        assert links[0] == (GALLERY_URL, {"rel": "original"})
        assert links[1] == (f"/web/{GALLERY_URL}", {"rel": "timegate"})
        assert links[2][1]["rel"] == "timemap"
        assert [link[1]["rel"] for link in links[3:]] == rels
        assert [link[0] for link in links[3:]] == [memento_path(first), memento_path(second)]
        assert "default-src 'self'" in (answer.header("Content-Security-Policy") or "")


@pytest.mark.parametrize(("asked", "which"), [("2", 0), ("1999", 0), ("29991231", 1)])
def test_a_partial_or_inexact_timestamp_redirects_to_the_nearest_capture(
        replay: RunningReplay, replay_catalog: Catalog, asked: str, which: int) -> None:
    nearest = captures_of(replay_catalog, GALLERY_URL)[which]
    answer = fetch(replay.port, f"/web/{asked}/{GALLERY_URL}")
    assert answer.status == 302
    assert answer.header("Location") == memento_path(nearest)
    answer = fetch(replay.port, f"/web/{asked}id_/{GALLERY_URL}")
    assert answer.header("Location") == memento_path(nearest, "id_")


def test_a_url_is_found_however_it_is_typed(replay: RunningReplay,
                                            replay_catalog: Catalog) -> None:
    first = captures_of(replay_catalog, GALLERY_URL)[0]
    timestamp = timestamp_of(first.fetched_ms)
    for spelled in (f"https://{HOST}/assets/gallery.html", f"{HOST}/assets/gallery.html",
                    f"http://www.{HOST.upper()}:80/assets/gallery.html",
                    f"http:/{HOST}/assets/gallery.html"):
        answer = fetch(replay.port, f"/web/{timestamp}/{spelled}")
        assert answer.status == 200 and b"<title>Gallery</title>" in answer.body, spelled


def test_every_asset_replays_the_bytes_the_store_holds(replay: RunningReplay,
                                                       replay_catalog: Catalog) -> None:
    with replay_catalog.reading() as tx:
        pages = tx.replay.page(_site_keys(), limit=1000)
    bodies = [c for c in pages if c.body_sha256 and c.status_code == 200]
    assert len({c.url for c in bodies}) >= 20, "the gallery's assets were captured"
    for capture in bodies:
        answer = fetch(replay.port, memento_path(capture, "id_"))
        assert answer.status == 200, (capture.url, answer.text)
        assert hashlib.sha256(answer.body).hexdigest() == capture.body_sha256, capture.url
        assert (answer.header("Content-Type") or "").split(";")[0] == capture.content_type
        assert answer.header("Content-Length") == str(capture.body_size)
    # Twice: the second answers come from the body cache.
    again = fetch(replay.port, memento_path(bodies[0], "id_"))
    assert hashlib.sha256(again.body).hexdigest() == bodies[0].body_sha256


def _site_keys():  # type: ignore[no-untyped-def]
    from archive_pipelines.catalog.replay_repository import KeyRange

    return KeyRange.prefix(urlkey(f"http://{HOST}/"))


def _image(catalog: Catalog) -> Capture:
    return captures_of(catalog, f"http://{HOST}/assets/img/photo-1600.png")[0]


def test_ranges_and_head(replay: RunningReplay, replay_catalog: Catalog) -> None:
    image = _image(replay_catalog)
    whole = fetch(replay.port, memento_path(image)).body
    assert len(whole) == image.body_size and image.body_size and image.body_size > 20
    part = fetch(replay.port, memento_path(image), headers={"Range": "bytes=5-14"})
    assert part.status == 206 and part.body == whole[5:15]
    assert part.header("Content-Range") == f"bytes 5-14/{len(whole)}"
    tail = fetch(replay.port, memento_path(image), headers={"Range": "bytes=-7"})
    assert tail.status == 206 and tail.body == whole[-7:]
    past = fetch(replay.port, memento_path(image), headers={"Range": f"bytes={len(whole)}-"})
    assert past.status == 416 and past.header("Content-Range") == f"bytes */{len(whole)}"
    head = fetch(replay.port, memento_path(image), method="HEAD")
    assert head.status == 200 and head.body == b""
    assert head.header("Content-Length") == str(len(whole))
    assert head.header("Memento-Datetime") == http_date(image.fetched_ms)


def test_recorded_headers_come_back_neutralised(replay: RunningReplay,
                                                replay_catalog: Catalog) -> None:
    from archive_pipelines.replay.capture_headers import CaptureHeaders

    image = _image(replay_catalog)
    answer = fetch(replay.port, memento_path(image))
    headers = CaptureHeaders(replay.server.replayer.headers.data_dir,
                             replay.server.replayer.bodies.store, capacity=1)
    recorded = headers.response(index_path=image.index_path, record_offset=image.record_offset,
                                url=image.url, request_index=image.request_index)
    assert recorded is not None and recorded.headers
    for name, value in recorded.headers:
        lowered = name.lower()
        if lowered in ("content-type", "transfer-encoding", "connection", "keep-alive"):
            continue
        kept = answer.headers.get_all(name) or []
        renamed = answer.headers.get_all(f"X-Archive-Orig-{name}") or []
        assert value in kept + renamed, name
        if lowered in ("date", "server", "content-length", "set-cookie", "last-modified", "etag"):
            assert value in renamed, name


def test_a_recorded_redirect_replays_into_the_archive(replay: RunningReplay,
                                                      replay_catalog: Catalog) -> None:
    moved, target = next(iter(GALLERY_REDIRECTS.items()))
    hop = next(c for c in captures_of(replay_catalog, f"http://{HOST}{moved}")
               if c.kind == "redirect")
    answer = fetch(replay.port, memento_path(hop))
    assert 300 <= answer.status < 400 and answer.status == hop.status_code
    assert answer.header("Location") == f"/web/{timestamp_of(hop.fetched_ms)}/http://{HOST}{target}"
    assert answer.header("Memento-Datetime") == http_date(hop.fetched_ms)
    followed = fetch(replay.port, answer.header("Location") or "")
    assert followed.status in (200, 302)


def test_a_url_never_captured_is_a_404_page_naming_it(replay: RunningReplay) -> None:
    answer = fetch(replay.port, f"/web/2026/http://{HOST}/never-there.html")
    assert answer.status == 404
    assert f"http://{HOST}/never-there.html" in answer.text
    assert (answer.header("Content-Type") or "").startswith("text/html")


@pytest.mark.parametrize(("path", "reason"), [
    ("/web/" + "1" * 40 + "/http://example.com/", "bad timestamp"),
    ("/web/2026/http://example.com/%00", "NUL"),
    ("/web/2026/ftp://example.com/", "only http and https"),
    ("/web/2026/http://example.com:99999/", "bad URL"),
    ("/timemap/link/javascript:alert(1)", "bad URL"),
])
def test_bad_requests_are_answered_400_with_the_reason(replay: RunningReplay, path: str,
                                                       reason: str) -> None:
    answer = fetch(replay.port, path)
    assert answer.status == 400
    assert reason in answer.text


@pytest.mark.parametrize("path", [
    "/../../../../etc/passwd", "/web/2026/../../../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd",
    "/web/2026/http://x.test/../../../../etc/passwd", "/web/2026/file:///etc/passwd",
])
def test_path_traversal_reads_no_file(replay: RunningReplay, path: str) -> None:
    answer = fetch(replay.port, path)
    assert answer.status in (400, 404)
    assert b"root:" not in answer.body


def test_a_100_kb_url_is_refused(replay: RunningReplay) -> None:
    answer = fetch(replay.port, "/web/2026/http://example.com/" + "a" * 100_000)
    assert answer.status in (400, 414)


def test_absolute_form_requests_are_not_proxied(replay: RunningReplay) -> None:
    answer = fetch(replay.port, "http://example.com/")
    assert answer.status == 200 and "Web archive" in answer.text  # our home page, not theirs


_ARCHIVED = re.compile(r"/web/([0-9]{14})([a-z]{2}_)?/(https?://[^\"'\s)>]+)")


def follow(port: int, path: str, *, hops: int = 3) -> Answer:
    return follow_to(port, path, hops=hops)[0]


def follow_to(port: int, path: str, *, hops: int = 3) -> tuple[Answer, str]:
    """The answer after redirects, and the path that gave it."""
    answer = fetch(port, path)
    while hops and 300 <= answer.status < 400 and answer.header("Location"):
        path = html.unescape(answer.header("Location") or "")
        answer = fetch(port, path)
        hops -= 1
    return answer, path


def test_the_gallery_and_its_css_are_rewritten_and_everything_they_name_replays(
        replay: RunningReplay, replay_catalog: Catalog) -> None:
    """As a browser loads the page: every asset it loads (`GALLERY_ASSETS`, named in the page
    or in its stylesheets) is named inside the archive at the page's time (in a stylesheet:
    the time of the stylesheet's capture it was redirected to, which may be a second later)
    and answers 200 (after redirects). URLs a browser would not load (`<input type=text
    src>`) may be 404."""
    first = captures_of(replay_catalog, GALLERY_URL)[0]
    timestamp = timestamp_of(first.fetched_ms)
    page = fetch(replay.port, memento_path(first))
    assert f'src="/web/{timestamp}im_/http://{HOST}/assets/img/photo-400.png"' in page.text
    assert 'href="css/main.css"' not in page.text
    seen: set[str] = set()
    # (The banner links to the neighbouring captures, at their own times.)
    waiting = [(re.sub(r'<div id="archive-replay-banner".*?</div>', "", page.text, flags=re.S),
                timestamp)]
    while waiting:
        text, expected = waiting.pop()
        for found in _ARCHIVED.finditer(html.unescape(text)):
            stamp, _modifier, url = found.groups()
            if not url.startswith(f"http://{HOST}/") or url in seen:
                continue
            assert stamp == expected, url
            seen.add(url)
            if _path(url).replace("%2C", ",") not in GALLERY_ASSETS:
                continue
            answer, served_at = follow_to(replay.port, found.group(0))
            assert answer.status == 200, (url, answer.status)
            if (answer.header("Content-Type") or "").startswith(("text/css", "text/plain")):
                own = re.match(r"/web/(\d{14})", served_at)
                assert own is not None, served_at
                waiting.append((answer.text, own.group(1)))
    named = {_path(url).replace("%2C", ",") for url in seen}
    missing = set(GALLERY_ASSETS) - named
    assert not missing, f"named nowhere in the replayed page or its stylesheets: {missing}"


def _path(url: str) -> str:
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


def test_the_banner_names_the_capture_and_its_neighbours(
        replay: RunningReplay, replay_catalog: Catalog) -> None:
    first, second = captures_of(replay_catalog, GALLERY_URL)
    page = fetch(replay.port, memento_path(first)).text
    banner = page[page.index('<div id="archive-replay-banner"'):]
    banner = banner[:banner.index("</div>")]
    assert f'href="{memento_path(second)}" rel="next"' in banner
    assert 'rel="prev"' not in banner
    assert f'href="/web/*/{GALLERY_URL}"' in banner
    assert page.index("<body") < page.index('id="archive-replay-banner"')
    for unbannered in (memento_path(first, "id_"), memento_path(first, "if_")):
        assert "archive-replay-banner" not in fetch(replay.port, unbannered).text


def test_the_banner_can_be_switched_off(replay_data: Path, replay_catalog: Catalog) -> None:
    replayer = make_replayer(replay_data, replay_catalog, ReplaySettings(banner=False))
    first = captures_of(replay_catalog, GALLERY_URL)[0]
    with running_replay(replayer) as replay:
        page = fetch(replay.port, memento_path(first)).text
    assert "archive-replay-banner" not in page and "/web/" in page
