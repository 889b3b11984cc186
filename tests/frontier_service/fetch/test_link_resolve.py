"""LinkResolver's fast paths give exactly what resolve_link (urljoin) gives."""

from __future__ import annotations

import random
from urllib.parse import urlsplit

import pytest

from archive_testkit.testweb import TestWebConfig, page_links, page_path
from frontier_service.fetch.link_resolve import LinkResolver
from frontier_service.fetch.links import resolve_link

pytestmark = pytest.mark.unit

BASES = ["http://h.test/dir/p.html", "http://h.test/", "https://h.test:8443/a/b/c/",
         "http://h.test/a/./b.html", "http://h.test", "http://h.test/a//b/c.html?x=1",
         "http://user:pw@h.test/dir/p.html"]
HREFS = ["/a", "a", "./a", "../a", "../../../../a", "a/../../b", "a/./b/.", "a/b/..", ".", "..",
         "", "?q=1", "#frag", "a#f", "/a?", "a?", "a?b=1&c=2", "/a?b=c?d|e", "//other.test/x",
         "http://x.test", "http://x.test?q", "http://x.test/p?q#f", "HTTP://X.test/", "mailto:a@b",
         "a:b/c", "./a:b", "http://[::1", "https:///nohost", " /a ", "/a\tb", "/s1/\np1.html",
         "/a/%2e%2e/b", "a//b", "/a//b", "%41", "a b", "/a b", "http://h.test/a b", "\\a", "/a/../b",
         "http://user:pw@x.test/a", "http://user@x.test:81/", "http://@x.test/", "//u:p@x.test/a",
         "http://a@b@x.test/", "http://u:p@/a", "a@b", "/a@b", "?q=a@b", "http://x.test/a@b"]


def test_links_never_carry_userinfo() -> None:
    """Credentials in a link are dropped, whichever path resolves it."""
    for base in BASES:
        resolver = LinkResolver(base, resolve_link)
        for href in HREFS:
            for resolved in (resolver.resolve(href), resolve_link(base, href)):
                assert resolved is None or "@" not in urlsplit(resolved).netloc, (base, href)
    assert resolve_link("http://h.test/", "http://user:pw@x.test:81/a?b#c") == "http://x.test:81/a?b"
    assert resolve_link("http://user:pw@h.test/d/", "p") == "http://h.test/d/p"
    assert resolve_link("http://h.test/", "http://u:p@/a") is None  # no host left


@pytest.mark.parametrize("base", BASES)
def test_fast_paths_agree_with_urljoin(base: str) -> None:
    resolver = LinkResolver(base, resolve_link)
    for href in HREFS:
        assert resolver.resolve(href) == resolve_link(base, href), (base, href)


def test_agrees_on_the_test_webs_links() -> None:
    config = TestWebConfig(seed=3, hosts=50, pages_per_host=200, special_fraction=0.5)
    rng = random.Random(1)
    checked = 0
    for _ in range(150):
        host, path = f"site{rng.randrange(50):04d}.test", page_path(rng.randrange(200))
        base = f"http://{host}{path}"
        resolver = LinkResolver(base, resolve_link)
        for href in page_links(config, host, path):
            assert resolver.resolve(href) == resolve_link(base, href), (base, href)
            checked += 1
    assert checked > 1000
