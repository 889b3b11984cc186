"""The pure link graph and page renderer: what any page is, without a server."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from selectolax.lexbor import LexborHTMLParser as HTMLParser

from archive_testkit.testweb import (
    TestWebConfig,
    absolute_links,
    all_hosts,
    host_name,
    is_page_path,
    page_links,
    page_path,
    render_page,
)
from archive_testkit.testweb.graph import IDN_HOST, relative_href

pytestmark = pytest.mark.unit

DEFAULT = TestWebConfig()
SAMPLE = [
    (host_name(DEFAULT, (n * 37) % DEFAULT.hosts), page_path((n * 101) % DEFAULT.pages_per_host))
    for n in range(300)
]


def test_same_seed_same_page_and_another_seed_another_page() -> None:
    again = TestWebConfig(seed=0)
    other = TestWebConfig(seed=1)
    for host, path in SAMPLE[:20]:
        assert render_page(DEFAULT, host, path) == render_page(again, host, path)
        assert page_links(DEFAULT, host, path) == page_links(again, host, path)
        assert render_page(DEFAULT, host, path) != render_page(other, host, path)


def test_host_names_are_case_and_port_insensitive() -> None:
    expected = render_page(DEFAULT, "site0003.test", "/")
    assert render_page(DEFAULT, "SITE0003.test:8080", "/") == expected
    with pytest.raises(ValueError, match="not a host"):
        page_links(DEFAULT, "example.com", "/")


def test_every_page_has_the_configured_number_of_links_and_a_size_within_bounds() -> None:
    sizes = [len(render_page(DEFAULT, host, path)) for host, path in SAMPLE]
    assert all(len(page_links(DEFAULT, host, path)) == 50 for host, path in SAMPLE)
    assert min(sizes) >= 20_000 and max(sizes) <= 60_000
    assert max(sizes) - min(sizes) > 20_000  # spread over the range, not one size


def test_anchors_in_the_html_are_exactly_page_links() -> None:
    for host, path in SAMPLE[:40]:
        tree = HTMLParser(render_page(DEFAULT, host, path).decode())
        hrefs = [node.attributes["href"] for node in tree.css("a")]
        assert hrefs == page_links(DEFAULT, host, path)


def test_pages_reference_the_shared_assets() -> None:
    tree = HTMLParser(render_page(DEFAULT, "site0005.test", "/s1/p1.html").decode())
    assert [n.attributes["src"] for n in tree.css("script[src]")] == ["/static/app.js"]
    assert [n.attributes["src"] for n in tree.css("img")] == ["/img/logo.png"]
    assert {n.attributes["href"] for n in tree.css("link[href]")} == {
        "/static/site.css",
        "/static/font.woff2",
    }


def test_links_mix_same_host_cross_host_relative_and_decorated_forms() -> None:
    hrefs = [href for host, path in SAMPLE[:100] for href in page_links(DEFAULT, host, path)]
    assert sum(h.startswith(("http://site", "//site")) for h in hrefs) > 1000  # absolute
    assert sum(h.startswith("//") for h in hrefs) > 50  # protocol-relative
    assert sum(h.startswith("/s") for h in hrefs) > 1000  # absolute path
    assert sum(h.startswith(("../", "p", "s")) for h in hrefs) > 300  # relative
    assert sum("#" in h for h in hrefs) > 100
    assert sum("?" in h for h in hrefs) > 100
    assert any(":80/" in h for h in hrefs) and any(h.startswith("http://SITE") for h in hrefs)


def test_cross_host_share_follows_the_config() -> None:
    for host, path in SAMPLE[:50]:
        base_host = urlsplit(f"http://{host}/").hostname
        links = absolute_links(DEFAULT, host, path)
        others = [u for u in links if urlsplit(u).hostname not in (base_host, IDN_HOST)]
        assert 2 <= len(others) <= 25
    lonely = TestWebConfig(hosts=1)
    assert all(
        urlsplit(u).hostname in ("site0000.test", IDN_HOST)
        for u in absolute_links(lonely, "site0000.test", "/")
    )


def test_junk_links_appear_across_pages() -> None:
    hrefs = [href for host, path in SAMPLE for href in page_links(DEFAULT, host, path)]
    for prefix in ("mailto:", "javascript:", "ftp://", "data:", "tel:", f"http://{IDN_HOST}/"):
        assert any(h.startswith(prefix) for h in hrefs), prefix
    assert any("|" in h for h in hrefs)
    assert any(h.endswith("%0A") for h in hrefs)
    assert any("\n" in h for h in hrefs)
    assert any(h != h.strip() for h in hrefs)
    assert any(len(h) >= 10_000 for h in hrefs)


def test_ordinary_links_resolve_to_pages_that_exist() -> None:
    hosts = set(all_hosts(DEFAULT))
    for host, path in SAMPLE[:50]:
        for url in absolute_links(DEFAULT, host, path):
            parts = urlsplit(url)
            if parts.hostname in hosts and not parts.query and parts.path.endswith(".html"):
                is_special = parts.path.startswith(("/missing/", "/error/", "/enc/", "/malformed/"))
                assert is_page_path(DEFAULT, parts.path) or is_special, url


@pytest.mark.parametrize(
    ("here", "target", "expected"),
    [
        ("/", "/", "./"),
        ("/", "/s3/p3.html", "s3/p3.html"),
        ("/s3/p3.html", "/s3/p13.html", "p13.html"),
        ("/s3/p3.html", "/", "../"),
        ("/s3/p3.html", "/s4/p4.html", "../s4/p4.html"),
        ("/private/p1.html", "/s1/p1.html", "../s1/p1.html"),
    ],
)
def test_relative_href(here: str, target: str, expected: str) -> None:
    assert relative_href(here, target) == expected


@pytest.mark.parametrize(
    ("path", "exists"),
    [
        ("/", True),
        ("/s1/p1.html", True),
        ("/s9/p999.html", True),
        ("/s0/p1000.html", False),  # beyond pages_per_host
        ("/s2/p1.html", False),  # wrong section
        ("/s1/p01.html", False),
        ("/private/p9.html", True),
        ("/private/p10.html", False),
        ("/index.html", False),
    ],
)
def test_is_page_path(path: str, exists: bool) -> None:
    assert is_page_path(DEFAULT, path) is exists
