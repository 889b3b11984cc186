"""What the test web answers to (host, path): a pure function, the server only carries it out."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from archive_testkit.testweb.asset_pages import GALLERY_REDIRECTS, asset_file
from archive_testkit.testweb.assets import SHARED_ASSETS, json_document, pdf, png
from archive_testkit.testweb.config import TestWebConfig, host_name, normalize_host
from archive_testkit.testweb.docs_site import docs_robots_txt, is_docs_path, render_docs_page
from archive_testkit.testweb.graph import IDN_HOST, is_page_path
from archive_testkit.testweb.hosts import DeadMode, HostTraits, host_traits
from archive_testkit.testweb.js_pages import js_file
from archive_testkit.testweb.render import render_page
from archive_testkit.testweb.script_built import (
    is_script_built,
    page_data,
    page_of_data_path,
    shell_page,
)
from archive_testkit.testweb.seeding import stable_rng
from archive_testkit.testweb.special import (
    idn_page,
    invalid_encoding_page,
    malformed_page,
    robots_txt,
)

HTML = "text/html; charset=utf-8"
TEXT = "text/plain; charset=utf-8"
IDN_HOST_ASCII = IDN_HOST.encode("idna").decode("ascii")
MAX_REDIRECT_CHAIN = 50

Renderer = Callable[[TestWebConfig, str, str], bytes]


class Action(Enum):
    RESPOND = "respond"  # send status, headers and body
    CLOSE = "close"  # drop the connection without a response
    STREAM = "stream"  # send `stream_bytes` of chunked body


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    body: bytes = b""
    content_type: str = HTML
    headers: tuple[tuple[str, str], ...] = ()
    action: Action = Action.RESPOND
    delay_s: float = 0.0  # wait before answering, on top of the configured latency
    stream_bytes: int = 0


NOT_FOUND = Reply(404, b"<html><body><h1>404 Not Found</h1></body></html>\n")
CLOSE = Reply(0, action=Action.CLOSE)


def resolve(
    config: TestWebConfig, host: str, path: str, *, render: Renderer = render_page
) -> Reply:
    """The reply to a request for `path` (decoded, no query string) on Host header `host`."""
    traits = host_traits(config, host)
    if traits is None:
        name = normalize_host(host)
        if config.docs_pages and name == config.docs_host:
            return _docs(config, path)
        if name in (IDN_HOST_ASCII, IDN_HOST):
            return Reply(200, idn_page(config)) if path == "/" else NOT_FOUND
        return Reply(404, b"no such host\n", TEXT)
    if traits.dead is DeadMode.CLOSE:
        return CLOSE
    if traits.dead is DeadMode.UNAVAILABLE:
        return Reply(503, b"<h1>503 Service Unavailable</h1>\n", headers=(("Retry-After", "3600"),))
    if path == "/robots.txt":
        body = robots_txt(config, traits)
        return NOT_FOUND if body is None else Reply(200, body, TEXT)
    if asset := SHARED_ASSETS.get(path):
        return Reply(200, asset.body, asset.content_type)
    if path.startswith("/assets/") and (found := asset_file(path)):
        return Reply(200, *found)
    if location := GALLERY_REDIRECTS.get(path):
        return _redirect(301, location)
    if path.startswith("/js/") and (js := js_file(path)):
        status, body, content_type, headers = js
        return Reply(status, body, content_type, headers)
    if is_page_path(config, path):
        if is_script_built(config, traits.host, path):
            return Reply(200, shell_page(config, traits.host, path, render=render))
        return Reply(200, render(config, traits.host, path))
    if (page := page_of_data_path(path)) and is_script_built(config, traits.host, page):
        return Reply(200, page_data(config, traits.host, page, render=render), "application/json")
    if traits.special and (reply := _special(config, traits, path)):
        return reply
    if traits.traps and (reply := _trap(config, traits, path, render=render)):
        return reply
    return NOT_FOUND


def _docs(config: TestWebConfig, path: str) -> Reply:
    if path == "/robots.txt":
        return Reply(200, docs_robots_txt(), TEXT)
    if is_docs_path(config, path):
        return Reply(200, render_docs_page(config, f"http://{config.docs_host}", path))
    return NOT_FOUND


def _special(config: TestWebConfig, traits: HostTraits, path: str) -> Reply | None:
    if path.startswith("/redirect/") and (step := path[len("/redirect/") :]).isdigit():
        remaining = int(step)
        if not 0 < remaining <= MAX_REDIRECT_CHAIN:
            return None
        # Alternate 301/302 and relative/absolute Location headers along the chain.
        target = "/" if remaining == 1 else f"/redirect/{remaining - 1}"
        location = target if remaining % 2 else f"http://{traits.host}{target}"
        return _redirect(301 if remaining % 2 else 302, location)
    if path == "/loop/a":
        return _redirect(302, "/loop/b")
    if path == "/loop/b":
        return _redirect(301, f"http://{traits.host}/loop/a")
    if path == "/offsite":
        other = host_name(config, (traits.index + 1) % config.hosts)
        return _redirect(301, f"http://{other}/")
    if path.startswith("/error/"):
        return Reply(500, b"<h1>500 Internal Server Error</h1>\n")
    if path.startswith("/doc/") and path.endswith(".pdf"):
        return Reply(200, pdf(f"Report {path} on {traits.host}"), "application/pdf")
    if path.startswith("/img/") and path.endswith(".png"):
        image = png(64, 48, stable_rng(config.seed, "png", traits.host, path))
        return Reply(200, image, "image/png")
    if path.startswith("/api/") and path.endswith(".json"):
        return Reply(200, json_document(config.seed, traits.host, path), "application/json")
    if path == "/enc/latin1.html":
        return Reply(200, invalid_encoding_page(traits))  # header says UTF-8; body is not
    if path == "/malformed/page.html":
        return Reply(200, malformed_page(traits))
    return None


def _trap(config: TestWebConfig, traits: HostTraits, path: str, *, render: Renderer) -> Reply | None:
    if path.startswith("/slow/"):
        return Reply(200, render(config, traits.host, path), delay_s=config.slow_delay_s)
    if path.startswith("/huge/"):
        return Reply(200, action=Action.STREAM, stream_bytes=config.huge_body_bytes)
    return None


def _redirect(status: int, location: str) -> Reply:
    body = f'<html><body>Moved to <a href="{location}">{location}</a></body></html>\n'
    return Reply(status, body.encode(), headers=(("Location", location),))
