"""What each special path answers, decided without a server."""

from __future__ import annotations

import json

import pytest

from archive_testkit.testweb import (
    DeadMode,
    RobotsKind,
    hosts_where,
    render_page,
    resolve,
)
from archive_testkit.testweb.routes import Action
from tests.testkit.testweb.web_client import SMALL

pytestmark = pytest.mark.unit

SPECIAL = hosts_where(SMALL, lambda t: t.special and t.alive)[0]
PLAIN = hosts_where(SMALL, lambda t: not t.special and not t.traps and t.alive)[0]
TRAPS = hosts_where(SMALL, lambda t: t.traps and t.alive)[0]


def _robots(kind: RobotsKind) -> bytes:
    host = hosts_where(SMALL, lambda t: t.robots is kind)[0]
    reply = resolve(SMALL, host, "/robots.txt")
    assert reply.status == 200
    return reply.body


def test_robots_disallows_private_and_some_hosts_set_a_crawl_delay() -> None:
    standard, delayed = _robots(RobotsKind.STANDARD), _robots(RobotsKind.CRAWL_DELAY)
    assert b"User-agent: *\nDisallow: /private/\n" in standard
    assert b"Crawl-delay" not in standard
    assert b"User-agent: *\nDisallow: /private/\nCrawl-delay: 2\n" in delayed


def test_odd_robots_files() -> None:
    garbage = _robots(RobotsKind.GARBAGE)
    with pytest.raises(UnicodeDecodeError):
        garbage.decode("utf-8")
    huge = _robots(RobotsKind.HUGE)
    assert len(huge) == SMALL.huge_robots_bytes
    assert huge.index(b"Disallow: /private/") < 200  # readable even when truncated
    missing = hosts_where(SMALL, lambda t: t.robots is RobotsKind.NONE and t.alive)[0]
    assert resolve(SMALL, missing, "/robots.txt").status == 404


def test_redirect_chain_alternates_statuses_and_location_forms() -> None:
    steps = []
    path = "/redirect/3"
    while path != "/":
        reply = resolve(SMALL, SPECIAL, path)
        location = dict(reply.headers)["Location"]
        steps.append((reply.status, location))
        path = location.removeprefix(f"http://{SPECIAL}")
    assert steps == [
        (301, "/redirect/2"),
        (302, f"http://{SPECIAL}/redirect/1"),
        (301, "/"),
    ]


def test_redirect_loop_and_offsite_redirect() -> None:
    assert dict(resolve(SMALL, SPECIAL, "/loop/a").headers)["Location"] == "/loop/b"
    assert dict(resolve(SMALL, SPECIAL, "/loop/b").headers)["Location"] == f"http://{SPECIAL}/loop/a"
    offsite = resolve(SMALL, SPECIAL, "/offsite")
    assert offsite.status == 301
    assert dict(offsite.headers)["Location"].startswith("http://site")
    assert SPECIAL not in dict(offsite.headers)["Location"]


@pytest.mark.parametrize(
    ("path", "status", "content_type", "magic"),
    [
        ("/missing/1.html", 404, "text/html; charset=utf-8", b"<html>"),
        ("/error/1.html", 500, "text/html; charset=utf-8", b"<h1>500"),
        ("/doc/report-1.pdf", 200, "application/pdf", b"%PDF-1.4"),
        ("/img/photo-1.png", 200, "image/png", b"\x89PNG\r\n\x1a\n"),
        ("/api/item-1.json", 200, "application/json", b"{"),
        ("/malformed/page.html", 200, "text/html; charset=utf-8", b"<html><head><title>Broken"),
    ],
)
def test_special_paths(path: str, status: int, content_type: str, magic: bytes) -> None:
    reply = resolve(SMALL, SPECIAL, path)
    assert (reply.status, reply.content_type) == (status, content_type)
    assert reply.body.startswith(magic)
    if status == 200:  # only hosts with the trait have them
        assert resolve(SMALL, PLAIN, path).status == 404


def test_json_document_parses() -> None:
    document = json.loads(resolve(SMALL, SPECIAL, "/api/item-2.json").body)
    assert document["host"] == SPECIAL and len(document["items"]) == 5


def test_invalid_encoding_page_claims_utf8_but_is_not() -> None:
    reply = resolve(SMALL, SPECIAL, "/enc/latin1.html")
    assert reply.content_type == "text/html; charset=utf-8"
    assert b'<meta charset="utf-8">' in reply.body
    with pytest.raises(UnicodeDecodeError):
        reply.body.decode("utf-8")
    assert "Déjà vu" in reply.body.decode("latin-1")


def test_traps_and_dead_hosts() -> None:
    slow = resolve(SMALL, TRAPS, "/slow/1.html")
    assert (slow.status, slow.delay_s) == (200, SMALL.slow_delay_s)
    huge = resolve(SMALL, TRAPS, "/huge/1.html")
    assert (huge.action, huge.stream_bytes) == (Action.STREAM, SMALL.huge_body_bytes)
    closing = hosts_where(SMALL, lambda t: t.dead is DeadMode.CLOSE)[0]
    assert resolve(SMALL, closing, "/").action is Action.CLOSE
    unavailable = hosts_where(SMALL, lambda t: t.dead is DeadMode.UNAVAILABLE)[0]
    assert resolve(SMALL, unavailable, "/robots.txt").status == 503


def test_pages_assets_and_unknown_hosts() -> None:
    page = resolve(SMALL, f"{PLAIN}:8080", "/s1/p1.html")
    assert page.body == render_page(SMALL, PLAIN, "/s1/p1.html")
    assert resolve(SMALL, PLAIN, "/private/p3.html").status == 200  # exists; robots forbids it
    assert resolve(SMALL, PLAIN, "/static/app.js").content_type == "application/javascript"
    assert resolve(SMALL, "example.com", "/").status == 404
    assert resolve(SMALL, "xn--bcher-kva.test", "/").status == 200
