"""The replay server's routes and middleware.

- `/web/<timestamp><modifier>/<url>`: a memento (`replayer`); `/web/<url>`: the TimeGate;
  `/web/*/<url>`: the calendar of a URL; `/web/*/<url>*`: the URLs under a prefix (HTML, or
  JSON with `?output=json` or `Accept: application/json`);
- `/timemap/link/<url>`, `/timemap/json/<url>`: TimeMaps;
- `/cdx` (pywb's dialect) and `/cdx/search/cdx` (the Internet Archive's): the CDX server;
- `/healthz`, `/metrics`: as the crawler's;
- anything else: a root-relative request a replayed script built (`/data.json`), sent to the
  capture of that URL at the time of the page in its `Referer`; otherwise 404.

Errors are pages that say what happened (400 for a bad path, 404 naming what is not archived,
502 naming a capture whose body is corrupt); never a traceback. Nothing is ever fetched from
the live web: every answer comes from the catalog and the store.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from urllib.parse import urljoin, urlsplit

from aiohttp import web

from archive_pipelines.replay.archive import mementos
from archive_pipelines.replay.cdx_answer import CdxAnswer, answer_cdx
from archive_pipelines.replay.memento import LINK_FORMAT, header_uri, timemap_json, timemap_link
from archive_pipelines.replay.metrics import render_prometheus
from archive_pipelines.replay.pages import (
    calendar_json,
    calendar_page,
    error_page,
    page,
    prefix_json,
    prefix_page,
)
from archive_pipelines.replay.replayer import PATHS, Replayer, ReplayProblem
from archive_pipelines.replay.responses import REPLAY_CSP
from archive_pipelines.replay.wayback_paths import (
    BadReplayPath,
    check_text,
    original_url,
    parse_wayback_path,
)

log = logging.getLogger(__name__)
REPLAYER: web.AppKey[Replayer] = web.AppKey("replayer", Replayer)
LIST_LIMIT = 10_000  # captures a calendar or a prefix listing shows at most
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def make_app(replayer: Replayer) -> web.Application:
    app = web.Application(middlewares=[_answers], client_max_size=64 * 1024)
    app[REPLAYER] = replayer
    app.router.add_get("/", _home)
    app.router.add_get("/healthz", _healthz)
    app.router.add_get("/metrics", _metrics)
    app.router.add_get("/web/{rest:.*}", _web)
    app.router.add_get("/timemap/{form}/{rest:.*}", _timemap)
    app.router.add_get("/cdx", _cdx)
    app.router.add_get("/cdx/search/cdx", _cdx)
    app.router.add_route("*", "/{rest:.*}", _elsewhere)
    return app


def _html(status: int, text: str) -> web.Response:
    return web.Response(status=status, text=text, content_type="text/html", charset="utf-8",
                        headers={"Content-Security-Policy": REPLAY_CSP})


@web.middleware
async def _answers(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Counts every request; error pages for what the handlers refuse; no traceback out."""
    metrics = request.app[REPLAYER].metrics
    metrics.requests += 1
    metrics.in_flight += 1
    try:
        response = await handler(request)
    except ReplayProblem as problem:
        response = problem.response()
    except BadReplayPath as exc:
        response = _html(400, error_page("Bad request", str(exc)))
    except web.HTTPException as exc:
        response = _html(exc.status, error_page(exc.reason, exc.text or exc.reason))
    except (ConnectionResetError, ConnectionError):
        raise
    except Exception:
        log.exception("replay of %s failed", request.raw_path[:300])
        response = _html(500, error_page("Server error", "This request could not be answered; "
                                         "the server's log says why."))
    finally:
        metrics.in_flight -= 1
    metrics.count_status(response.status)
    return response


def _rest(request: web.Request, prefix: str) -> str:
    """The raw (still percent-encoded) path after `prefix`, with the query."""
    raw = request.raw_path
    if not raw.startswith(prefix):
        raise BadReplayPath(f"bad path {raw[:200]!r}")
    return raw[len(prefix):]


def _wants_json(request: web.Request) -> bool:
    return request.query.get("output") == "json" or \
        "application/json" in request.headers.get("Accept", "")


async def _web(request: web.Request) -> web.StreamResponse:
    replayer = request.app[REPLAYER]
    rest = _rest(request, "/web/")
    if rest.startswith("*/"):
        return await _listing(request, replayer, rest[2:])
    path = parse_wayback_path(rest)
    if not path.timestamp:
        return await replayer.timegate(request, path.url)
    return await replayer.memento(request, path)


def _without_output(text: str) -> str:
    """A listing's URL without our own `output=json` parameter (`?output=json` at the end)."""
    for suffix in ("?output=json", "&output=json"):
        if text.endswith(suffix):
            return text[:-len(suffix)]
    return text


async def _listing(request: web.Request, replayer: Replayer, rest: str) -> web.StreamResponse:
    as_json = _wants_json(request)
    text = _without_output(rest)
    prefix = text.endswith("*")
    url = original_url(text[:-1] if prefix else text)
    if replayer.archive.excluded(url):
        raise ReplayProblem(403, "Withdrawn", f"{url} has been withdrawn from this archive.")
    if prefix:
        found = await replayer.blocking(replayer.archive.under_prefix, url, limit=LIST_LIMIT + 1)
        more = len(found) > LIST_LIMIT
        body = (prefix_json if as_json else prefix_page)(url, found[:LIST_LIMIT], more=more)
    else:
        found = await replayer.blocking(replayer.archive.timeline, url, limit=LIST_LIMIT + 1)
        more = len(found) > LIST_LIMIT
        body = (calendar_json if as_json else calendar_page)(url, found[:LIST_LIMIT], more=more)
    if as_json:
        return web.Response(text=body, content_type="application/json")
    return _html(200, body)


async def _timemap(request: web.Request) -> web.StreamResponse:
    replayer = request.app[REPLAYER]
    form = request.match_info["form"]
    if form not in ("link", "json"):
        raise ReplayProblem(404, "No such TimeMap", f"TimeMaps come as link or json, not {form[:40]!r}.")
    url = original_url(_rest(request, f"/timemap/{form}/"))
    if replayer.archive.excluded(url):
        raise ReplayProblem(403, "Withdrawn", f"{url} has been withdrawn from this archive.")
    found = await replayer.blocking(replayer.archive.timeline, url, limit=LIST_LIMIT)
    if not found:
        raise ReplayProblem(404, "Not in the archive", f"The archive holds no capture of {url}.")
    original = found[-1].url
    if form == "json":
        return web.Response(text=timemap_json(original, mementos(found), PATHS),
                            content_type="application/json")
    return web.Response(text=timemap_link(original, mementos(found), PATHS),
                        content_type=LINK_FORMAT)


async def _cdx(request: web.Request) -> web.StreamResponse:
    """The CDX server: pywb's dialect at `/cdx`, the Internet Archive's at `/cdx/search/cdx`."""
    replayer = request.app[REPLAYER]
    dialect = "ia" if request.path == "/cdx/search/cdx" else "pywb"
    params = {name: request.query.getall(name) for name in set(request.query.keys())}
    answer: CdxAnswer = await replayer.blocking(
        answer_cdx, params, catalog=replayer.archive.catalog, dialect=dialect,
        exclusions=replayer.archive.withdrawn)
    return web.Response(status=answer.status, body=answer.body,
                        headers={"Content-Type": answer.content_type})


async def _elsewhere(request: web.Request) -> web.StreamResponse:
    """A path outside the archive's: from a replayed page (its Referer names a memento),
    the capture of that path on the page's site, at the page's time."""
    referer = request.headers.get("Referer", "")
    place = urlsplit(referer) if referer else None
    if place is not None and place.netloc == request.host and place.path.startswith("/web/"):
        try:
            page_path = parse_wayback_path(referer[referer.index("/web/") + 5:])
        except BadReplayPath:
            page_path = None
        if page_path is not None and page_path.timestamp:
            check_text(request.raw_path)
            target = urljoin(page_path.url, request.raw_path)
            return web.Response(status=302, headers={
                "Location": header_uri(f"/web/{page_path.timestamp}/{target}"),
                "Content-Length": "0"})
    raise ReplayProblem(404, "Not found", f"{request.path[:200]} is not a page of this server: "
                        "archived pages are at /web/<timestamp>/<url>.",
                        links=(("/", "Home"),))


async def _home(request: web.Request) -> web.StreamResponse:
    body = ("<p>Archived pages: <code>/web/&lt;timestamp&gt;/&lt;url&gt;</code> "
            "(YYYYMMDDhhmmss or a leading part of it).</p>"
            "<ul><li><code>/web/*/&lt;url&gt;</code>: every capture of a URL</li>"
            "<li><code>/web/*/&lt;url&gt;*</code>: the URLs under a prefix</li>"
            "<li><code>/timemap/link/&lt;url&gt;</code>: a Memento TimeMap</li>"
            "<li><code>/cdx?url=&lt;url&gt;</code>: the CDX server</li></ul>")
    return _html(200, page("Web archive", body))


async def _healthz(request: web.Request) -> web.StreamResponse:
    metrics = request.app[REPLAYER].metrics
    body = {"status": "draining" if metrics.stopping else "ok",
            "uptime_s": round(metrics.uptime_s(), 1), "requests": metrics.requests,
            "in_flight": metrics.in_flight}
    return web.Response(text=json.dumps(body) + "\n", content_type="application/json",
                        status=503 if metrics.stopping else 200)


async def _metrics(request: web.Request) -> web.StreamResponse:
    replayer = request.app[REPLAYER]
    metrics = replayer.metrics
    for name, cache in (("body", replayer.bodies.cache), ("header", replayer.headers.cache),
                        ("lookup", replayer.archive.cache)):
        setattr(metrics, f"{name}_cache_hits", cache.hits)
        setattr(metrics, f"{name}_cache_misses", cache.misses)
    metrics.body_cache_bytes = replayer.bodies.cache.size
    metrics.header_cache_records = len(replayer.headers.cache)
    return web.Response(text=render_prometheus(replayer.metrics), content_type="text/plain",
                        charset="utf-8", headers={"X-Content-Format": "prometheus-0.0.4"})
