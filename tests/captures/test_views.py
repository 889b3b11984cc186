"""Crawled pages in the symlink views (`[crawl] views`): a folder per session, host and day
that mirrors the site; every link opens the page's stored bytes; verify, vacuum and
rebuild-views keep them; they never take a legacy snapshot's by_timestamp/<timestamp>."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from archive_pipelines.captures.segment_ingest import ingest_crawl
from archive_pipelines.captures.views import CaptureFile, ViewCapture, capture_links, group_dir, page_path
from archive_pipelines.datadir import initialize
from archive_pipelines.settings import CrawlSettings, Settings
from archive_pipelines.storage.assembly import StorageParts, open_storage
from archive_pipelines.storage.verify import verify_storage
from archive_pipelines.storage.view_rebuild import rebuild_views
from tests.helpers.captures import capture_primary

SID = "61ccb46a-a3a8-44ec-9ea5-bb438d85a450"


@pytest.mark.unit
@pytest.mark.parametrize(("url", "path"), [
    ("http://a.test/", "index.html"),
    ("http://a.test/s1/p2.html", "s1/p2.html"),
    ("http://a.test/dir/", "dir/index.html"),
    ("http://a.test/p.html?a=1&b=2", "p.html@a_1_b_2"),
    ("http://a.test/../../etc/passwd", "_/_/etc/passwd"),  # dot-names never climb
    ("http://a.test/%2e%2e/x", "_2e_2e/x"),
])
def test_page_path_mirrors_the_site_and_stays_inside(url: str, path: str) -> None:
    assert page_path(url) == path


@pytest.mark.unit
def test_a_long_url_gets_a_hashed_name_and_a_long_query_a_hash() -> None:
    assert page_path("http://a.test/" + "d/" * 600 + "x").startswith("_long/")
    name = page_path("http://a.test/p?" + "q=" + "x" * 300)
    assert name.startswith("p@") and len(name) == len("p@") + 16


@pytest.mark.unit
def test_the_newest_capture_of_a_path_wins_and_other_views_get_folder_links() -> None:
    old = ViewCapture(1, SID, 1_795_000_000_000, "http://a.test/", "a" * 64)
    new = ViewCapture(2, SID, 1_795_000_100_000, "http://a.test/", "b" * 64)
    files, folders = capture_links(("by_domain", "by_timestamp"), [new, old])
    home = group_dir("by_timestamp", SID, "20261118", host="a.test")
    assert files == {f"{home}/index.html": CaptureFile("b" * 64, ".html")}
    link = group_dir("by_domain", SID, "20261118", host="a.test")
    assert folders == {link: f"../../../{home}"}
    assert home.startswith("by_timestamp/crawl-61ccb46a-")  # never a legacy <timestamp>


@pytest.mark.unit
@pytest.mark.parametrize(("url", "content_type", "ext"), [
    ("http://a.test/about", "text/html; charset=utf-8", ".html"),  # the link stays `about`
    ("http://a.test/feed", "application/rss+xml", ".rss"),
    ("http://a.test/logo", "IMAGE/PNG", ".png"),
    ("http://a.test/s/site.css", "text/plain", ".css"),  # the name's extension comes first
    ("http://a.test/blob", "application/octet-stream", ""),
    ("http://a.test/none", None, ""),
])
def test_a_pages_alias_has_its_names_extension_else_its_types(url: str, content_type: str | None,
                                                              ext: str) -> None:
    capture = ViewCapture(1, SID, 1_795_000_000_000, url, "c" * 64, content_type)
    files, _folders = capture_links(("by_timestamp",), [capture])
    home = group_dir("by_timestamp", SID, "20261118", host="a.test")
    assert files == {f"{home}/{page_path(url)}": CaptureFile("c" * 64, ext)}


def open_with_views(data_dir: Path, views: list[str]) -> StorageParts:
    settings = Settings(data_dir=data_dir, crawl=CrawlSettings(views=views))  # type: ignore[arg-type]
    initialize(settings)
    return open_storage(settings)


def test_crawled_pages_appear_in_the_views_and_open_their_bytes(crawl_data: Path) -> None:
    archive = crawl_data / "archive"
    legacy = archive / "1795582022.5"  # a legacy-looking folder: never touched
    legacy.mkdir(parents=True)
    (legacy / "index.json").write_text("{}")
    with open_with_views(crawl_data, ["by_domain", "by_timestamp"]) as parts:
        report = ingest_crawl(parts.catalog, capture_primary(parts), crawl_data)
        assert report.total("links") > 0
        with parts.catalog.reading() as tx:
            shown = tx.captures.view_captures()
        files, folders = capture_links(parts.views.crawl, (ViewCapture(*r) for r in shown))
        assert len(files) > 100 and folders
        for link, (body, ext) in files.items():
            data = (archive / link).read_bytes()  # through the anchor and the alias
            assert hashlib.sha256(data).hexdigest() == body, link
            assert os.path.realpath(archive / link) == parts.views.farm.aliases.path(body, ext)
        assert any(ext == ".html" and not link.endswith(".html") for link, (_b, ext) in files.items())
        for link in folders:  # by_domain/<host>/<day>/crawl-x -> the by_timestamp folder
            assert os.path.islink(archive / link) and os.listdir(archive / link)
        assert (legacy / "index.json").read_text() == "{}"
        clean = verify_storage(parts.catalog, parts.primary, parts.views, vacuum=True,
                               data_dir=crawl_data)
        assert clean.problems == 0 and clean.found["orphan_links"] == 0, clean.found
        assert all(os.path.islink(archive / link) for link in files)  # vacuum kept them
        rebuilt = rebuild_views(parts.catalog, parts.primary, parts.views, work=parts.work, clean=True)
        assert rebuilt.links >= len(files) + len(folders)
        again = verify_storage(parts.catalog, parts.primary, parts.views, data_dir=crawl_data)
        assert again.problems == 0, again.found
        parts.catalog.engine.dispose()


def test_without_crawl_views_no_link_is_made(crawl_data: Path) -> None:
    with open_with_views(crawl_data, []) as parts:
        report = ingest_crawl(parts.catalog, capture_primary(parts), crawl_data)
        assert report.ingested and report.total("links") == 0
        assert not list((crawl_data / "archive").glob("by_timestamp/crawl-*"))
        parts.catalog.engine.dispose()
