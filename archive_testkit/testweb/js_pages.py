"""A JavaScript test site, served under `/js/` on every live host: pages a crawler that runs
no script archives badly and a browser archives fully, and pages that are fine over HTTP.

Why a path on every host (as `/assets/`) rather than a host of its own: every test web has it
with no setting to turn on, it shares its origin with the host's ordinary pages (a crawl's
scope that lists the host lists it), and nothing outside `/js/` links to it, so crawls that do
not seed it never see it (existing tests are unchanged).

The site, from `INDEX` (plain `<a href>` links to `INDEX_LINKS`):
- `FETCHED`: its script `fetch()`es `FETCHED_JSON` and inserts paragraphs (`FETCHED_TEXT`),
  `FETCHED_IMAGES` and a link to `FROM_JSON`; no preload names them.
- `LAZY`: `LAZY_EAGER_IMAGE` above the fold; `LAZY_IMAGES` far below it, `<img data-src>`
  without a `src`, loaded by an IntersectionObserver when scrolled into view.
- `SPA` (and `SPA_ROUTES`): a single-page app; every route's URL answers the same shell (an
  empty `<div id="app">` and `SPA_BUNDLE`); the bundle renders the route and a nav of
  `<a data-route>` links followed with `history.pushState`, so the routes are linked only
  from script. Each route shows its image (`SPA_IMAGES`).
- `NOSCRIPT`: script inserts `NOSCRIPT_SCRIPT_IMAGE` and a link to `INTERACTIVE`; its
  `<noscript>` holds a different image and link (`NOSCRIPT_FALLBACK_IMAGE`, `FALLBACK`), which
  HTML parsing finds and a browser running script never loads.
- `FONTS`: script inserts the stylesheet `FONTS_STYLESHEET`, whose `@font-face` rules load
  `FONT_FILES` (both used by the page's text, so a browser requests both).
- `PLAIN`, `DECORATED` (a script that only sets a class, and JSON-LD), and the pages linked
  only from script or noscript (`FROM_JSON`, `INTERACTIVE`, `FALLBACK`): fine over HTTP.

Truth for measuring "needs a browser": `NEEDS_BROWSER` and `FINE_OVER_HTTP` (disjoint; their
union `JS_PAGES` is every page reachable from `INDEX`, by HTML or by script).
`BROWSER_RESOURCES[page]` is every request a browser makes for the page (itself aside, and
browser-internal ones like /favicon.ico), scrolled to the bottom, path -> resource type as
the crawler's `ResourceType` names them (a `fetch()` is "other");
`SCRIPT_ONLY[page]` is what of that, and of the page's links, only running its script finds.

Scope pages (not linked from `INDEX`, not in `JS_PAGES`): `ESCAPE` and `escape_path(port)`
try to reach 169.254.169.254, 10.0.0.1 and an unlisted loopback port by a `<script src>`,
an `<iframe>`, `fetch()`es, a same-host redirect (`ESCAPE_REDIRECT`) and WebSockets; see
`escapes(port)`. The page only tries: what stops them is the crawler's business. When every
try has settled, `<body data-tried>` lists their outcomes in order (fetches, the redirect,
WebSockets; each "answered", "failed", "open" or "closed").
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass

from archive_testkit.testweb.assets import png
from archive_testkit.testweb.seeding import stable_rng

HTML = "text/html; charset=utf-8"
JS = "text/javascript; charset=utf-8"
CSS = "text/css; charset=utf-8"

INDEX = "/js/"
FETCHED = "/js/fetched.html"
LAZY = "/js/lazy.html"
SPA = "/js/app/"
NOSCRIPT = "/js/noscript.html"
FONTS = "/js/fonts.html"
PLAIN = "/js/plain.html"
DECORATED = "/js/decorated.html"
FROM_JSON = "/js/from-json.html"  # linked only from FETCHED_JSON
INTERACTIVE = "/js/interactive.html"  # linked only by NOSCRIPT's script
FALLBACK = "/js/fallback.html"  # linked only from NOSCRIPT's <noscript>
INDEX_LINKS = (FETCHED, LAZY, SPA, NOSCRIPT, FONTS, PLAIN, DECORATED)

FETCHED_JSON = "/js/data/fetched.json"
FETCHED_TEXT = "Inserted by script from fetched JSON"
FETCHED_IMAGES = ("/js/img/fetched-0.png", "/js/img/fetched-1.png", "/js/img/fetched-2.png")

LAZY_EAGER_IMAGE = "/js/img/lazy-eager.png"
LAZY_IMAGES = ("/js/img/lazy-0.png", "/js/img/lazy-1.png", "/js/img/lazy-2.png")
LAZY_SPACER_PX = 1500  # above each lazy image: far below a 720-pixel-high viewport

SPA_BUNDLE = "/js/app/bundle.js"
SPA_STYLESHEET = "/js/app/app.css"
SPA_ROUTES = ("/js/app/about", "/js/app/items/1", "/js/app/items/2")
SPA_IMAGES: dict[str, str] = {
    SPA: "/js/app/img/home.png",
    "/js/app/about": "/js/app/img/about.png",
    "/js/app/items/1": "/js/app/img/item-1.png",
    "/js/app/items/2": "/js/app/img/item-2.png",
}
SPA_TITLES: dict[str, str] = {SPA: "App home", "/js/app/about": "About the app",
                              "/js/app/items/1": "Item one", "/js/app/items/2": "Item two"}

NOSCRIPT_SCRIPT_IMAGE = "/js/img/scripted.png"
NOSCRIPT_FALLBACK_IMAGE = "/js/img/fallback.png"

FONTS_STYLESHEET = "/js/css/fonts.css"
FONT_FILES = ("/js/fonts/display.woff2", "/js/fonts/text.woff2")

PLAIN_IMAGE = "/js/img/plain.png"
DECORATED_IMAGE = "/js/img/decorated.png"
DECORATE_SCRIPT = "/js/decorate.js"

NEEDS_BROWSER = frozenset({FETCHED, LAZY, SPA, *SPA_ROUTES, NOSCRIPT, FONTS})
FINE_OVER_HTTP = frozenset({INDEX, PLAIN, DECORATED, FROM_JSON, INTERACTIVE, FALLBACK})
JS_PAGES = NEEDS_BROWSER | FINE_OVER_HTTP

# Every subresource a browser requests for each page (scrolled to the bottom).
BROWSER_RESOURCES: dict[str, dict[str, str]] = {
    INDEX: {},
    FETCHED: {FETCHED_JSON: "other", **dict.fromkeys(FETCHED_IMAGES, "image")},
    LAZY: {LAZY_EAGER_IMAGE: "image", **dict.fromkeys(LAZY_IMAGES, "image")},
    **{route: {SPA_STYLESHEET: "stylesheet", SPA_BUNDLE: "script", SPA_IMAGES[route]: "image"}
       for route in (SPA, *SPA_ROUTES)},
    NOSCRIPT: {NOSCRIPT_SCRIPT_IMAGE: "image"},
    FONTS: {FONTS_STYLESHEET: "stylesheet", **dict.fromkeys(FONT_FILES, "font")},
    PLAIN: {PLAIN_IMAGE: "image"},
    DECORATED: {DECORATED_IMAGE: "image", DECORATE_SCRIPT: "script"},
    FROM_JSON: {}, INTERACTIVE: {}, FALLBACK: {},
}
# Of each page's resources and links, those only running its script finds.
SCRIPT_ONLY: dict[str, frozenset[str]] = {
    FETCHED: frozenset({FETCHED_JSON, *FETCHED_IMAGES, FROM_JSON}),
    LAZY: frozenset(LAZY_IMAGES),
    **{route: frozenset({SPA_IMAGES[route], SPA, *SPA_ROUTES}) for route in (SPA, *SPA_ROUTES)},
    NOSCRIPT: frozenset({NOSCRIPT_SCRIPT_IMAGE, INTERACTIVE}),
    FONTS: frozenset({FONTS_STYLESHEET, *FONT_FILES}),
}
# Pages reachable only by running a page's script.
SCRIPT_ONLY_LINKS = frozenset({FROM_JSON, INTERACTIVE, *SPA_ROUTES})

ESCAPE = "/js/escape.html"
ESCAPE_REDIRECT = "/js/escape/redirect"  # 302 to the metadata address
UNLISTED_LOOPBACK_PORT = 9  # discard: nothing listens there on a test machine
METADATA_URL = "http://169.254.169.254/latest/meta-data/"
_ESCAPE_RE = re.compile(r"/js/escape/([1-9][0-9]{0,4})\.html")


@dataclass(frozen=True)
class Escapes:
    """Every place an escape page tries to reach, by how it tries."""

    script: str  # <script src>
    iframe: str  # <iframe src>
    fetches: tuple[str, ...]  # fetch() of absolute URLs
    redirect: str  # fetch() of ESCAPE_REDIRECT (a path on the page's host), which redirects to
    redirect_location: str
    websockets: tuple[str, ...]  # new WebSocket(...) of absolute URLs
    same_host_websocket: str  # and of this path on the page's own host

    def addresses(self) -> tuple[str, ...]:
        """The off-site URLs tried directly (the redirect's location aside)."""
        return (self.script, self.iframe, *self.fetches, *self.websockets)


def escape_path(port: int) -> str:
    """An escape page whose unlisted loopback port is `port` (1..65535)."""
    if not 0 < port < 65536:
        raise ValueError(f"not a TCP port: {port}")
    return f"/js/escape/{port}.html"


def escapes(port: int = UNLISTED_LOOPBACK_PORT) -> Escapes:
    """What `escape_path(port)` (`ESCAPE` for the default port) tries to reach."""
    return Escapes(
        script="http://169.254.169.254/latest/user-data.js",
        iframe="http://10.0.0.1/admin/",
        fetches=(METADATA_URL, "http://10.0.0.1/api/", f"http://127.0.0.1:{port}/"),
        redirect=ESCAPE_REDIRECT,
        redirect_location=METADATA_URL,
        websockets=("ws://10.0.0.1/socket", f"ws://127.0.0.1:{port}/socket"),
        same_host_websocket="/js/socket",
    )


def js_file(path: str) -> tuple[int, bytes, str, tuple[tuple[str, str], ...]] | None:
    """(status, body, Content-Type, headers) of `path` (decoded, no query), or None."""
    if path == ESCAPE_REDIRECT:
        body = f'<a href="{METADATA_URL}">moved</a>\n'.encode()
        return 302, body, HTML, (("Location", METADATA_URL),)
    if path == ESCAPE:
        return 200, _escape_html(UNLISTED_LOOPBACK_PORT), HTML, ()
    if match := _ESCAPE_RE.fullmatch(path):
        port = int(match[1])
        return (200, _escape_html(port), HTML, ()) if port < 65536 else None
    if path in _SPA_PAGES:
        return 200, _SPA_SHELL, HTML, ()
    if text := _TEXT_FILES.get(path):
        return 200, text[0], text[1], ()
    if path in _IMAGES:
        return 200, _image(path), "image/png", ()
    if path in FONT_FILES:
        return 200, _font(path), "font/woff2", ()
    return None


def _page(title: str, body: str, head: str = "") -> bytes:
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f"<title>{title}</title>\n{head}</head>\n<body>\n{body}</body></html>\n").encode()


_INDEX_HTML = _page("JavaScript test site", "<h1>Pages built by script, and plain ones</h1>\n<ul>\n"
                    + "".join(f'<li><a href="{path}">{path}</a></li>\n' for path in INDEX_LINKS)
                    + "</ul>\n")

_FETCHED_HTML = _page("Fetched", f"""<h1>Items</h1>
<div id="items"></div>
<script>
fetch("{FETCHED_JSON}").then(r => r.json()).then(data => {{
  const box = document.getElementById("items");
  for (const item of data.items) {{
    const p = document.createElement("p");
    p.className = "item";
    p.textContent = item.text;
    const img = document.createElement("img");
    img.src = item.image;
    img.className = "item";
    box.append(p, img);
  }}
  for (const link of data.links) {{
    const a = document.createElement("a");
    a.href = link.href;
    a.textContent = link.text;
    box.append(a);
  }}
  document.body.dataset.ready = "1";
}});
</script>
""")
_FETCHED_JSON = json.dumps({
    "items": [{"text": f"{FETCHED_TEXT}, item {n}", "image": image}
              for n, image in enumerate(FETCHED_IMAGES)],
    "links": [{"href": FROM_JSON, "text": "a page linked from JSON"}],
}, indent=1).encode()

_LAZY_HTML = _page("Lazy images", f"""<h1>Scroll down</h1>
<img src="{LAZY_EAGER_IMAGE}" alt="" width="64" height="64">
""" + "".join(f"""<div style="height: {LAZY_SPACER_PX}px">spacer</div>
<img class="lazy" data-src="{src}" alt="" width="64" height="64">
""" for src in LAZY_IMAGES) + """<script>
const observer = new IntersectionObserver(entries => {
  for (const entry of entries) {
    if (!entry.isIntersecting) continue;
    entry.target.src = entry.target.dataset.src;
    observer.unobserve(entry.target);
  }
});
document.querySelectorAll("img.lazy").forEach(img => observer.observe(img));
</script>
""")

_SPA_SHELL = _page(
    "App", '<div id="app"></div>\n<noscript>This app needs JavaScript.</noscript>\n',
    head=f'<link rel="stylesheet" href="{SPA_STYLESHEET}">\n'
         f'<script src="{SPA_BUNDLE}" defer></script>\n')
_SPA_BUNDLE = ("const ROUTES = " + json.dumps(
    {route: {"title": SPA_TITLES[route], "image": image} for route, image in SPA_IMAGES.items()},
    indent=1) + """;
function render(path) {
  const route = ROUTES[path] || {title: "Not found", image: null};
  const app = document.getElementById("app");
  const nav = document.createElement("nav");
  for (const [href, target] of Object.entries(ROUTES)) {
    const a = document.createElement("a");
    a.href = href;
    a.textContent = target.title;
    a.dataset.route = "";
    nav.append(a, " ");
  }
  const h1 = document.createElement("h1");
  h1.textContent = route.title;
  app.replaceChildren(nav, h1);
  if (route.image) {
    const img = document.createElement("img");
    img.src = route.image;
    img.alt = route.title;
    app.append(img);
  }
  document.title = route.title;
  app.dataset.route = path;
}
document.addEventListener("click", event => {
  const a = event.target.closest("a[data-route]");
  if (!a) return;
  event.preventDefault();
  history.pushState({}, "", a.href);
  render(location.pathname);
});
window.addEventListener("popstate", () => render(location.pathname));
render(location.pathname);
""").encode()

_NOSCRIPT_HTML = _page("Noscript", f"""<h1>Gallery</h1>
<div id="gallery"></div>
<noscript><img src="{NOSCRIPT_FALLBACK_IMAGE}" alt="fallback">
<a href="{FALLBACK}">the version without script</a></noscript>
<script>
const img = document.createElement("img");
img.src = "{NOSCRIPT_SCRIPT_IMAGE}";
img.alt = "scripted";
const a = document.createElement("a");
a.href = "{INTERACTIVE}";
a.textContent = "the interactive version";
document.getElementById("gallery").append(img, a);
</script>
""")

_FONTS_HTML = _page("Fonts", f"""<h1 class="display">Set in a web font</h1>
<p class="text">Both faces come from a stylesheet that script inserts.</p>
<script>
const link = document.createElement("link");
link.rel = "stylesheet";
link.href = "{FONTS_STYLESHEET}";
document.head.append(link);
</script>
""")
_FONTS_CSS = f"""@font-face {{ font-family: "JsDisplay"; src: url(../fonts/display.woff2) format("woff2"); }}
@font-face {{ font-family: "JsText"; src: url("{FONT_FILES[1]}") format("woff2"); }}
h1.display {{ font-family: JsDisplay, serif; }}
p.text {{ font-family: JsText, sans-serif; }}
""".encode()

_PLAIN_HTML = _page("Plain", f"""<h1>A page with no script</h1>
<p>Everything here is in the HTML.</p>
<img src="{PLAIN_IMAGE}" alt="">
<p><a href="{INDEX}">back</a></p>
""")
_DECORATED_HTML = _page("Decorated", f"""<h1>A page whose script builds nothing</h1>
<p>The script only sets a class; the JSON-LD is data, not code.</p>
<img src="{DECORATED_IMAGE}" alt="">
<p><a href="{INDEX}">back</a></p>
""", head=f'<script src="{DECORATE_SCRIPT}"></script>\n'
          '<script type="application/ld+json">{"@context": "https://schema.org", '
          '"@type": "WebPage", "name": "Decorated"}</script>\n')
_DECORATE_JS = b'document.documentElement.classList.add("js");\n'


def _leaf(title: str) -> bytes:
    return _page(title, f'<h1>{title}</h1>\n<p><a href="{INDEX}">back</a></p>\n')


_TEXT_FILES: dict[str, tuple[bytes, str]] = {
    INDEX: (_INDEX_HTML, HTML),
    FETCHED: (_FETCHED_HTML, HTML),
    FETCHED_JSON: (_FETCHED_JSON, "application/json"),
    LAZY: (_LAZY_HTML, HTML),
    SPA_BUNDLE: (_SPA_BUNDLE, JS),
    SPA_STYLESHEET: (b"#app { font-family: sans-serif; }\n", CSS),
    NOSCRIPT: (_NOSCRIPT_HTML, HTML),
    FONTS: (_FONTS_HTML, HTML),
    FONTS_STYLESHEET: (_FONTS_CSS, CSS),
    PLAIN: (_PLAIN_HTML, HTML),
    DECORATED: (_DECORATED_HTML, HTML),
    DECORATE_SCRIPT: (_DECORATE_JS, JS),
    FROM_JSON: (_leaf("Linked from JSON"), HTML),
    INTERACTIVE: (_leaf("The interactive version"), HTML),
    FALLBACK: (_leaf("The version without script"), HTML),
}
_SPA_PAGES = frozenset(SPA_IMAGES)
_IMAGES = frozenset({*FETCHED_IMAGES, LAZY_EAGER_IMAGE, *LAZY_IMAGES, *SPA_IMAGES.values(),
                     NOSCRIPT_SCRIPT_IMAGE, NOSCRIPT_FALLBACK_IMAGE, PLAIN_IMAGE,
                     DECORATED_IMAGE})


def _escape_html(port: int) -> bytes:
    tries = escapes(port)
    return _page("Escape", f"""<h1>This page tries to leave</h1>
<iframe src="{tries.iframe}"></iframe>
<script>
const tries = [];
for (const url of {json.dumps([*tries.fetches, tries.redirect])}) {{
  tries.push(fetch(url).then(() => "answered", () => "failed"));
}}
for (const url of {json.dumps([*tries.websockets])}.concat(
    [location.origin.replace(/^http/, "ws") + {json.dumps(tries.same_host_websocket)}])) {{
  tries.push(new Promise(done => {{
    try {{
      const socket = new WebSocket(url);
      socket.onopen = () => {{ done("open"); socket.close(); }};
      socket.onerror = () => done("failed");
      socket.onclose = () => done("closed");
    }} catch (error) {{
      done("failed");
    }}
  }}));
}}
Promise.all(tries).then(results => {{ document.body.dataset.tried = results.join(" "); }});
</script>
<script src="{tries.script}"></script>
""")


@functools.lru_cache(maxsize=64)
def _image(path: str) -> bytes:
    return png(16, 16, stable_rng(0, "js-pages", path))


@functools.lru_cache(maxsize=8)
def _font(path: str) -> bytes:
    return b"wOF2" + path.encode() + stable_rng(0, "js-pages", path).randbytes(512)
