"""Whether a page fetched over HTTP needs the browser: the decision rules of `--browser auto`.

`browser_signals(html, url=)` decides from the page's HTML alone: external scripts are not
fetched (that would cost a request per bundle on every page, and what a bundle does is not
readable without running it), so an external bundle counts only as "there is a bundle". It
parses with lexbor (selectolax, the parser link extraction uses): ~0.15 ms for a 54 KB
test-web page, of which the parse is ~0.12 ms (a byte pre-scan for the markup the rules read
saved nothing: four substring scans cost as much as the parse).

The signals (each named in `BrowserVerdict.signals` when it fires; any one means "needed"):
- "script-fetch": inline script text that fetches (`fetch(`, `XMLHttpRequest`, `$.ajax`/
  `$.get`/`axios`) and inserts into the DOM (`innerHTML`, `outerHTML`, `insertAdjacentHTML`,
  `appendChild`, `.append(`, `replaceChildren`, `insertBefore`, `document.write`).
- "script-inserted-content": inline script that creates a link, image or frame element
  (`createElement("a"|"img"|"iframe"|...)`): content only running the script finds. Scripts
  that create only `<script>` elements (analytics loaders) do not count.
- "script-inserted-stylesheet": inline script that creates a `<link>` and names
  "stylesheet" (fonts and images that the inserted CSS loads).
- "empty-body-with-bundle": a `<script src>` and a body with next to no content: fewer than
  `EMPTY_BODY_CHARS` characters of visible text (script, style, noscript and template
  aside) and no `<a href>` or `<img>` outside `<noscript>`.
- "noscript-fallback": a `<noscript>` holding a link or an image (what a browser running
  script shows instead is something else).
- "client-routing": inline script using `history.pushState`/`replaceState` or listening to
  `popstate`/`hashchange`; a `#!` URL; or an empty root mount element (`#app`, `#root`,
  `#__next`, `#__nuxt`, `#svelte`, `[data-reactroot]`, `[ng-app]`, `[ng-version]`) beside
  a `<script src>`.
- "lazy-data-src": an `<img>` (or `<iframe>`) with `data-src`/`data-srcset`/
  `data-lazy-src` and no `src` (or a `data:` placeholder `src`).

Measured on the test kit's JavaScript site and its mixed web in
tests/frontier_service/browser/test_signals.py (precision and recall printed there).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from selectolax.lexbor import LexborHTMLParser

EMPTY_BODY_CHARS = 200  # visible text below this, with no link or image: an empty shell

SCRIPT_FETCH = "script-fetch"
SCRIPT_INSERTED_CONTENT = "script-inserted-content"
SCRIPT_INSERTED_STYLESHEET = "script-inserted-stylesheet"
EMPTY_BODY_WITH_BUNDLE = "empty-body-with-bundle"
NOSCRIPT_FALLBACK = "noscript-fallback"
CLIENT_ROUTING = "client-routing"
LAZY_DATA_SRC = "lazy-data-src"
SIGNALS = (SCRIPT_FETCH, SCRIPT_INSERTED_CONTENT, SCRIPT_INSERTED_STYLESHEET,
           EMPTY_BODY_WITH_BUNDLE, NOSCRIPT_FALLBACK, CLIENT_ROUTING, LAZY_DATA_SRC)

_FETCHES = re.compile(r"\bfetch\s*\(|XMLHttpRequest|\$\.(?:ajax|get|getJSON|post)\s*\(|"
                      r"\baxios\b")
_INSERTS = re.compile(r"\.(?:innerHTML|outerHTML)\s*=|\.(?:insertAdjacentHTML|appendChild|append|"
                      r"prepend|replaceChildren|insertBefore|replaceWith)\s*\(|"
                      r"document\.write(?:ln)?\s*\(")
_CREATES_CONTENT = re.compile(
    r"createElement\s*\(\s*[\"'`](?:a|img|iframe|picture|source|video|audio|embed|object)"
    r"[\"'`]\s*\)", re.IGNORECASE)
_CREATES_LINK = re.compile(r"createElement\s*\(\s*[\"'`]link[\"'`]\s*\)", re.IGNORECASE)
_ROUTES = re.compile(r"history\.(?:pushState|replaceState)\b|[\"']popstate[\"']|"
                     r"[\"']hashchange[\"']|\bonhashchange\b|\bonpopstate\b")
_JS_TYPES = frozenset({"", "text/javascript", "application/javascript", "module",
                       "text/ecmascript", "application/ecmascript", "text/jscript"})
_MOUNT_SELECTOR = ("#app, #root, #__next, #__nuxt, #svelte, [data-reactroot], [ng-app], "
                   "[ng-version]")
_LAZY_SELECTOR = "img, iframe"
_LAZY_ATTRIBUTES = ("data-src", "data-srcset", "data-lazy-src")
_NOT_VISIBLE = ["script", "style", "noscript", "template"]


@dataclass(frozen=True, slots=True)
class BrowserVerdict:
    """Whether a page needs the browser, and the signals (names in `SIGNALS`) that said so."""

    needed: bool
    signals: tuple[str, ...]
    # Whether the page runs any script at all (inline or a bundle): one that runs none looks
    # the same in a browser (what its CSS loads, the HTTP crawl fetches too), so `auto`
    # never spends a sample render on it.
    scripted: bool = True


def browser_signals(html: bytes | str, *, url: str) -> BrowserVerdict:
    """The verdict on the HTML `html` fetched from `url`, from the HTML alone (external
    scripts are not fetched; see the module docstring for the rules)."""
    raw = html.encode("utf-8", "replace") if isinstance(html, str) else html
    fired: list[str] = []
    if "#!" in url:
        fired.append(CLIENT_ROUTING)
    tree = LexborHTMLParser(raw)
    inline, bundle = _scripts(tree)
    if _FETCHES.search(inline) and _INSERTS.search(inline):
        fired.append(SCRIPT_FETCH)
    if _CREATES_CONTENT.search(inline) and _INSERTS.search(inline):
        fired.append(SCRIPT_INSERTED_CONTENT)
    if _CREATES_LINK.search(inline) and "stylesheet" in inline:
        fired.append(SCRIPT_INSERTED_STYLESHEET)
    if any(node.css_first("a[href], img") is not None for node in tree.css("noscript")):
        fired.append(NOSCRIPT_FALLBACK)
    if _ROUTES.search(inline) or (bundle and _empty_mount(tree)):
        fired.append(CLIENT_ROUTING)
    if _lazy(tree):
        fired.append(LAZY_DATA_SRC)
    if bundle and _empty_body(tree):  # last: it strips the tree's invisible elements
        fired.append(EMPTY_BODY_WITH_BUNDLE)
    return _verdict(fired, scripted=bool(inline.strip()) or bundle)


def _verdict(fired: list[str], *, scripted: bool) -> BrowserVerdict:
    signals = tuple(dict.fromkeys(fired))
    return BrowserVerdict(needed=bool(signals), signals=signals, scripted=scripted)


def _scripts(tree: LexborHTMLParser) -> tuple[str, bool]:
    """(the text of every inline JavaScript script, joined; whether any script has a src)."""
    inline: list[str] = []
    bundle = False
    for node in tree.css("script"):
        kind = (node.attributes.get("type") or "").strip().lower()
        if kind not in _JS_TYPES:
            continue  # JSON-LD, templates, import maps: data, not code
        if node.attributes.get("src"):
            bundle = True
        elif text := node.text(deep=True):
            inline.append(text)
    return "\n".join(inline), bundle


def _empty_mount(tree: LexborHTMLParser) -> bool:
    return any(not node.text(deep=True).strip() and next(node.iter(), None) is None
               for node in tree.css(_MOUNT_SELECTOR))


def _lazy(tree: LexborHTMLParser) -> bool:
    for node in tree.css(_LAZY_SELECTOR):
        attributes = node.attributes
        if any(attributes.get(name) for name in _LAZY_ATTRIBUTES):
            src = (attributes.get("src") or "").strip()
            if not src or src.lower().startswith("data:"):
                return True
    return False


def _empty_body(tree: LexborHTMLParser) -> bool:
    body = tree.body
    if body is None:
        return True
    body.strip_tags(_NOT_VISIBLE)
    if body.css_first("a[href], img") is not None:
        return False
    return len(" ".join(body.text(deep=True).split())) < EMPTY_BODY_CHARS
