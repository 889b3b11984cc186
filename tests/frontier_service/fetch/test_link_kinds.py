"""What each asset of a page is loaded as (a browser's request destination), srcset and
inline CSS in HTML, and the per-page asset budget."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from archive_testkit.testweb.asset_pages import (
    GALLERY,
    GALLERY_ASSETS,
    GALLERY_REDIRECTS,
    MANY,
    MANY_IMAGES,
    asset_file,
)
from frontier_service.fetch.links import PageLinks, extract_links, extract_stylesheet_links
from frontier_service.frontier.frontier_record import ResourceType

pytestmark = pytest.mark.unit

R = ResourceType


def kinds(links: PageLinks) -> list[tuple[str, ResourceType]]:
    return list(zip(links.assets, links.asset_types, strict=True))


@pytest.mark.parametrize(("tag", "kind"), [
    ('<img src="a">', R.IMAGE),
    ('<script src="a"></script>', R.SCRIPT),
    ('<link rel="stylesheet" href="a">', R.STYLESHEET),
    ('<link rel="alternate stylesheet" href="a" title="Dark">', R.STYLESHEET),
    ('<link rel="icon" href="a">', R.IMAGE),
    ('<link rel="shortcut icon" href="a">', R.IMAGE),
    ('<link rel="apple-touch-icon" href="a">', R.IMAGE),
    ('<link rel="preload" href="a" as="font" crossorigin>', R.FONT),
    ('<link rel="preload" href="a" as="style">', R.STYLESHEET),
    ('<link rel="preload" href="a" as="script">', R.SCRIPT),
    ('<link rel="preload" href="a" as="IMAGE">', R.IMAGE),
    ('<link rel="preload" href="a" as="video">', R.MEDIA),
    ('<link rel="preload" href="a" as="fetch">', R.OTHER),
    ('<link rel="preload" href="a">', R.OTHER),
    ('<link rel="prefetch" href="a" as="document">', R.DOCUMENT),
    ('<link rel="modulepreload" href="a">', R.SCRIPT),
    ('<link rel="manifest" href="a">', R.OTHER),
    ('<video src="a"></video>', R.MEDIA),
    ('<video poster="a"></video>', R.IMAGE),
    ('<video><source src="a" type="video/webm"></video>', R.MEDIA),
    ('<audio src="a"></audio>', R.MEDIA),
    ('<video><track src="a" kind="captions"></video>', R.MEDIA),
    ('<object data="a"></object>', R.OTHER),
    ('<embed src="a">', R.OTHER),
    ('<input type="image" src="a">', R.IMAGE),
    ('<input type=" Image " src="a">', R.IMAGE),
    ('<table><tr><td><body background="a"></td></tr></table>', R.IMAGE),
])
def test_what_each_asset_is_loaded_as(tag: str, kind: ResourceType) -> None:
    links = extract_links(f"<html><head></head><body>{tag}</body></html>".encode(),
                          "http://site.test/dir/page.html")
    assert kinds(links) == [("http://site.test/dir/a", kind)]
    assert links.pages == []


@pytest.mark.parametrize("tag", [
    '<input type="text" src="a">', '<input src="a">', '<link rel="dns-prefetch" href="//a.test">',
    '<link rel="preconnect" href="https://a.test">', '<img srcset="">', "<style></style>",
    '<div style="color: red">x</div>',
])
def test_no_asset(tag: str) -> None:
    links = extract_links(f"<body>{tag}</body>".encode(), "http://site.test/")
    assert links.assets == []


def test_srcset_and_inline_css_in_a_page() -> None:
    html = b"""<html><head><base href="http://cdn.test/b/">
    <style>@import "s.css"; @font-face{src:url(f.woff2)} .h{background:url(h.png)}</style>
    <link rel="preload" as="image" href="p.png" imagesrcset="p1.png 1x, p2.png 2x">
    </head><body style="background:url('body.png')">
    <img src="i.png" srcset="i.png 1x, i-2.png?w=2,3 2x, bad.png 0w">
    <picture><source srcset="s-1.webp 1x,s-2.webp 2x" type="image/webp"><img src="s.png"></picture>
    <div style="background:url(data:image/png;base64,AAAA)">d</div>
    <p style="background-image:url(&quot;p-bg.png&quot;)">p</p></body></html>"""
    links = extract_links(html, "http://site.test/page.html")
    assert kinds(links) == [  # document order; inline styles (attributes) last
        ("http://cdn.test/b/s.css", R.STYLESHEET),
        ("http://cdn.test/b/f.woff2", R.FONT),  # inline CSS resolves against the page's base
        ("http://cdn.test/b/h.png", R.IMAGE),
        ("http://cdn.test/b/p.png", R.IMAGE),
        ("http://cdn.test/b/p1.png", R.IMAGE),
        ("http://cdn.test/b/p2.png", R.IMAGE),
        ("http://cdn.test/b/i.png", R.IMAGE),
        ("http://cdn.test/b/i-2.png?w=2,3", R.IMAGE),
        ("http://cdn.test/b/s-1.webp", R.IMAGE),
        ("http://cdn.test/b/s-2.webp", R.IMAGE),
        ("http://cdn.test/b/s.png", R.IMAGE),
        ("http://cdn.test/b/body.png", R.IMAGE),
        ("http://cdn.test/b/p-bg.png", R.IMAGE),
    ]


def test_an_asset_named_twice_keeps_its_first_kind() -> None:
    html = b'<link rel="preload" href="x" as="image"><link rel="stylesheet" href="x"><img src=x>'
    assert kinds(extract_links(html, "http://site.test/")) == [("http://site.test/x", R.IMAGE)]


def test_the_test_webs_gallery_loads_exactly_its_listed_assets() -> None:
    """The gallery, its stylesheets and theirs, as the crawler reads them: every request the
    kit lists, with the kit's kind, and nothing else."""
    origin = "http://site.test"
    found: dict[str, str] = {}
    queue = [(GALLERY, R.DOCUMENT)]
    while queue:
        path, _ = queue.pop(0)
        if path in GALLERY_REDIRECTS:
            continue  # its target is queued by the crawler, not found in a page
        served = asset_file(urlsplit(path).path)
        assert served is not None, path
        body, content_type = served
        if content_type.startswith("text/html"):
            links = extract_links(body, origin + path)
        elif found.get(path) == "stylesheet":
            links = extract_stylesheet_links(body, origin + path)
        else:
            continue
        for url, kind in kinds(links):
            relative = url.removeprefix(origin)
            if relative not in found:
                found[relative] = kind.value
                queue.append((relative, kind))
    assert found == GALLERY_ASSETS


def test_the_asset_budget_cuts_a_page_and_counts_the_rest() -> None:
    body, _ = asset_file(MANY) or (b"", "")
    links = extract_links(body + b'<img src="many/img-0.png">', f"http://site.test{MANY}",
                          max_assets=25)
    assert links.assets == [f"http://site.test/assets/many/img-{n}.png" for n in range(25)]
    assert links.assets_over_budget == MANY_IMAGES - 25  # the repeat is not counted
    unlimited = extract_links(body, f"http://site.test{MANY}")
    assert len(unlimited.assets) == MANY_IMAGES and unlimited.assets_over_budget == 0
    none = extract_links(body, f"http://site.test{MANY}", max_assets=0)
    assert none.assets == [] and none.assets_over_budget == MANY_IMAGES
