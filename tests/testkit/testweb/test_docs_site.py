"""The single-host documentation site: its shape, the test web's docs host, and the static copy
served by the threaded http.server."""

from __future__ import annotations

import http.client
import time
from collections import Counter
from pathlib import Path
from urllib.parse import urldefrag, urljoin, urlsplit

import pytest
from selectolax.lexbor import LexborHTMLParser as HTMLParser

from archive_testkit.testweb import (
    TestWebConfig,
    docs_links,
    docs_paths,
    read_jsonl,
    render_docs_page,
    resolve,
)
from archive_testkit.testweb.static_server import serve_static_in_subprocess, write_docs_site

DOCS = TestWebConfig(docs_pages=500, docs_links=300)
ORIGIN = "http://127.0.0.1:8000"


def _targets(path: str) -> list[str]:
    """The page's links as same-site paths, fragments dropped (the crawler's view)."""
    base = ORIGIN + path
    resolved = (urlsplit(urldefrag(urljoin(base, href))[0]) for href in docs_links(DOCS, ORIGIN, path))
    return [parts.path for parts in resolved if f"{parts.scheme}://{parts.netloc}" == ORIGIN]


@pytest.mark.unit
def test_every_page_has_the_configured_links_and_a_documentation_page_size() -> None:
    paths = docs_paths(DOCS)
    assert len(paths) == len(set(paths)) == 500 and paths[0] == "/"
    sizes = [len(render_docs_page(DOCS, ORIGIN, path)) for path in paths]
    assert min(sizes) >= 30_000 and max(sizes) <= 60_000
    assert all(len(docs_links(DOCS, ORIGIN, path)) == 300 for path in paths)


@pytest.mark.unit
def test_links_are_exactly_what_a_parser_reads_and_mix_the_forms_of_real_docs() -> None:
    path = docs_paths(DOCS)[200]
    page = HTMLParser(render_docs_page(DOCS, ORIGIN, path).decode())
    hrefs = [node.attributes["href"] for node in page.css("a")]
    assert hrefs == docs_links(DOCS, ORIGIN, path)
    kinds = Counter(
        "fragment" if h.startswith("#") else "absolute" if h.startswith(ORIGIN)
        else "root" if h.startswith("/") else "relative" for h in hrefs
    )
    assert all(kinds[kind] > 0 for kind in ("fragment", "absolute", "root", "relative"))
    assert any("#" in h and not h.startswith("#") for h in hrefs)
    assert len(set(_targets(path))) < len(_targets(path))  # some pages linked twice
    assert set(_targets(path)) <= set(docs_paths(DOCS))  # no broken links


def test_every_page_is_reachable_from_home_within_two_links() -> None:
    depth = {"/": 0}
    frontier = ["/"]
    while frontier:
        path = frontier.pop(0)
        for target in _targets(path):
            if target not in depth:
                depth[target] = depth[path] + 1
                frontier.append(target)
    assert set(depth) == set(docs_paths(DOCS))
    assert max(depth.values()) <= 2


@pytest.mark.unit
def test_the_same_config_gives_the_same_site() -> None:
    again = TestWebConfig(docs_pages=500, docs_links=300)
    other = TestWebConfig(docs_pages=500, docs_links=300, seed=1)
    path = docs_paths(DOCS)[77]
    assert render_docs_page(again, ORIGIN, path) == render_docs_page(DOCS, ORIGIN, path)
    assert render_docs_page(other, ORIGIN, path) != render_docs_page(DOCS, ORIGIN, path)


@pytest.mark.unit
def test_the_test_web_serves_the_site_on_its_docs_host_only_when_configured() -> None:
    home = resolve(DOCS, "docs.test:8080", "/")
    assert home.status == 200
    assert home.body == render_docs_page(DOCS, "http://docs.test", "/")
    assert resolve(DOCS, "docs.test", "/robots.txt").status == 200
    assert resolve(DOCS, "docs.test", "/nowhere.html").status == 404
    assert resolve(TestWebConfig(), "docs.test", "/").status == 404  # the default has no docs host
    assert resolve(DOCS, "site0001.test", "/").status == 200  # the many hosts are still there


@pytest.mark.parametrize("keep_alive", [False, True])
def test_static_copy_is_served_by_the_threaded_server_which_logs_every_request(
    tmp_path: Path, keep_alive: bool
) -> None:
    site, log_path = tmp_path / "site", tmp_path / "requests.jsonl"
    small = TestWebConfig(docs_pages=40, docs_links=60)
    before = time.monotonic()
    with serve_static_in_subprocess(site, log_path=log_path, keep_alive=keep_alive) as server:
        paths = write_docs_site(site, small, server.base_url)
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        bodies, closes = {}, []
        for path in [paths[0], paths[5], "/robots.txt", "/missing.html", paths[5]]:
            connection.request("GET", path)  # reconnects by itself after a closing reply
            response = connection.getresponse()
            bodies[path] = (response.status, response.read())
            closes.append(response.will_close)
        connection.close()
    assert server.process.returncode == 0  # SIGTERM is a clean shutdown
    assert closes == [not keep_alive] * 3 + [True, not keep_alive]  # http.server closes after errors
    assert bodies[paths[5]] == (200, render_docs_page(small, server.base_url, paths[5]))
    assert bodies["/robots.txt"][0] == 200 and bodies["/missing.html"][0] == 404
    records = read_jsonl(log_path)
    assert [(r.path_qs, r.status) for r in records] == [
        (paths[0], 200), (paths[5], 200), ("/robots.txt", 200), ("/missing.html", 404), (paths[5], 200)
    ]
    assert {r.host for r in records} == {"127.0.0.1"}
    times = [r.time for r in records]
    assert before <= times[0] and times == sorted(times) and times[-1] <= time.monotonic()
