"""A browser page load exported: its full-page screenshot and rendered DOM are `resource`
records (`urn:fullPage:<url>`, `urn:dom:<url>`, Browsertrix's naming) with their bytes in
full, every digest checked by warcio; the page's URL has HTML responses only; a WACZ's CDXJ
lists them under their URNs."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from collections import Counter
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from tests.helpers.browser_records import (
    DATA_URL,
    IMAGE_URL,
    PAGE_URL,
    BrowserCrawl,
    ingested_browser_crawl,
)
from tests.helpers.cli import run_cli

SHOT_URN, DOM_URN = f"urn:fullPage:{PAGE_URL}", f"urn:dom:{PAGE_URL}"


@pytest.fixture(scope="module")
def browser_crawl(tmp_path_factory: pytest.TempPathFactory) -> BrowserCrawl:
    return ingested_browser_crawl(tmp_path_factory.mktemp("export-browser") / "data", records=2)


def export(crawl: BrowserCrawl, out: Path, *args: str) -> dict[str, object]:
    done = run_cli("--data-dir", str(crawl.data_dir), "export-warc", str(out), "--json", *args)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert isinstance(report, dict)
    return report


def records(path: Path) -> list[tuple[str, str, str | None, bytes]]:
    """(type, target URI, WARC Content-Type, payload) of every record, digests checked."""
    found = []
    with open(path, "rb") as handle:
        for record in ArchiveIterator(handle, check_digests="raise"):
            found.append((record.rec_type, record.rec_headers.get_header("WARC-Target-URI"),
                          record.rec_headers.get_header("Content-Type"),
                          record.content_stream().read()))
    return found


@pytest.mark.parametrize("self_contained", [False, True])
def test_screenshot_and_dom_are_resource_records_of_their_bytes(
        browser_crawl: BrowserCrawl, tmp_path: Path, self_contained: bool) -> None:
    out = tmp_path / "browser.warc.gz"
    report = export(browser_crawl, out, *(["--self-contained"] if self_contained else []))
    assert report["renderings"] == 4 and report["failed_fetches"] == 0
    assert report["skipped"] == 0
    found = records(out)
    resources = [(uri, content_type, body) for kind, uri, content_type, body in found
                 if kind == "resource"]
    bodies = browser_crawl.bodies
    assert sorted(resources) == sorted([(SHOT_URN, "image/png", bodies.screenshot)] * 2 + [
        (DOM_URN, "text/html; charset=utf-8", bodies.dom)] * 2)
    of_page = Counter(kind for kind, uri, _type, _body in found if uri == PAGE_URL)
    assert of_page == (Counter(response=2, request=2, metadata=2) if self_contained else
                       Counter(response=1, revisit=1, request=2, metadata=2))
    responses = {uri for kind, uri, _type, _body in found if kind in ("response", "revisit")}
    assert responses == {PAGE_URL, DATA_URL, IMAGE_URL}


def test_warcio_check_passes(browser_crawl: BrowserCrawl, tmp_path: Path) -> None:
    out = tmp_path / "browser.warc.gz"
    report = export(browser_crawl, out)
    run = subprocess.run([str(Path(sys.executable).with_name("warcio")), "check", "-v", str(out)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr
    verdicts = Counter(line.strip() for line in run.stdout.splitlines() if line.startswith("    "))
    assert verdicts["digest pass"] == report["records"] - report["revisits"]


def test_a_waczs_index_lists_them_under_their_urns(browser_crawl: BrowserCrawl,
                                                   tmp_path: Path) -> None:
    out = tmp_path / "browser.wacz"
    export(browser_crawl, out, "--wacz")
    with zipfile.ZipFile(out) as package:
        lines = package.read("indexes/index.cdxj").decode().splitlines()
        pages = package.read("pages/pages.jsonl").decode().splitlines()
    entries = [json.loads(line.split(" ", 2)[2]) for line in lines]
    assert Counter((e["url"], e.get("mime")) for e in entries if e["url"].startswith("urn:")) == {
        (SHOT_URN, "image/png"): 2, (DOM_URN, "text/html"): 2}
    assert {e.get("mime") for e in entries if e["url"] == PAGE_URL} == {"text/html", "warc/revisit"}
    assert sum(PAGE_URL in line for line in pages) == 2
    assert not any("urn:" in line for line in pages)


def test_the_pages_metadata_names_the_requests_the_crawl_refused(browser_crawl: BrowserCrawl,
                                                                 tmp_path: Path) -> None:
    out = tmp_path / "browser.warc.gz"
    export(browser_crawl, out)
    [fields, _other] = [body.decode() for kind, uri, _type, body in records(out)
                        if kind == "metadata" and uri == PAGE_URL]
    lines = fields.splitlines()
    assert f"request: {DATA_URL}" in lines and f"request: {IMAGE_URL}" in lines
    refused = [line for line in lines if line.startswith("refused-request: ")]
    assert [line.split()[1] for line in refused] == [
        "http://169.254.169.254/latest/meta-data/", "ws://js.example.test/live",
        "http://js.example.test/api/track"]
    assert "WebSockets are not archived" in refused[1]
