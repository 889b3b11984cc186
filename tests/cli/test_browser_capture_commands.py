"""`captures` on a browser page load: the page lists its screenshot and DOM beneath it (with
sizes; in --json as `screenshot` and `dom`), never as captures of the URL, and
`--screenshot FILE` / `--dom FILE` write them out byte for byte."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from archive_pipelines.sizes import human_bytes
from tests.helpers.browser_records import PAGE_URL, SITE, BrowserCrawl, ingested_browser_crawl
from tests.helpers.cli import run_cli


@pytest.fixture(scope="module")
def browser_crawl(tmp_path_factory: pytest.TempPathFactory) -> BrowserCrawl:
    return ingested_browser_crawl(tmp_path_factory.mktemp("cli-browser") / "data", records=2)


def captures(crawl: BrowserCrawl, *args: str) -> str:
    done = run_cli("--data-dir", str(crawl.data_dir), "captures", *args)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_page_lists_its_screenshot_and_dom_beneath_it(browser_crawl: BrowserCrawl) -> None:
    lines = captures(browser_crawl, PAGE_URL).splitlines()
    bodies = browser_crawl.bodies
    shot = hashlib.sha256(bodies.screenshot).hexdigest()
    dom = hashlib.sha256(bodies.dom).hexdigest()
    assert lines[-1].startswith("2 capture(s) ")
    pages = [n for n, line in enumerate(lines) if " page " in line]
    assert len(pages) == 2
    for at in pages:
        below = lines[at + 1:at + 3]
        assert below[0].lstrip().startswith("screenshot") and shot in below[0]
        assert human_bytes(len(bodies.screenshot)) in below[0] and "image/png" in below[0]
        assert below[1].lstrip().startswith("rendered DOM") and dom in below[1]
        assert human_bytes(len(bodies.dom)) in below[1]


def test_json_puts_them_on_the_page_not_in_the_list(browser_crawl: BrowserCrawl) -> None:
    found = json.loads(captures(browser_crawl, PAGE_URL, "--json"))["captures"]
    assert [c["kind"] for c in found] == ["page", "page"]
    for page in found:
        assert page["screenshot"]["sha256"] == hashlib.sha256(
            browser_crawl.bodies.screenshot).hexdigest()
        assert page["screenshot"]["size"] == len(browser_crawl.bodies.screenshot)
        assert page["screenshot"]["content_type"] == "image/png" and page["screenshot"]["stored"]
        assert page["dom"]["size"] == len(browser_crawl.bodies.dom)
    under = json.loads(captures(browser_crawl, SITE, "--prefix", "--json"))["captures"]
    assert {c["kind"] for c in under} == {"page", "request"}


def test_the_screenshot_and_dom_are_written_out(browser_crawl: BrowserCrawl,
                                                tmp_path: Path) -> None:
    shot, dom = tmp_path / "page.png", tmp_path / "page.html"
    said = captures(browser_crawl, PAGE_URL, "--screenshot", str(shot), "--dom", str(dom))
    assert shot.read_bytes() == browser_crawl.bodies.screenshot
    assert shot.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert dom.read_bytes() == browser_crawl.bodies.dom
    assert f"written to {shot}" in said and "2026-11-18T11:06:41.250Z" in said  # the newest (AT_S + 1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["page.html", "page.png"]


@pytest.mark.parametrize(("args", "words", "status"), [
    ([f"{SITE}/api/items.json", "--screenshot", "x.png"], "has a screenshot", 1),
    ([PAGE_URL, "--to", "2020", "--screenshot", "x.png"], "has a screenshot", 1),
    ([SITE, "--prefix", "--screenshot", "x.png"], "take one URL", 2),
])
def test_asking_for_a_screenshot_that_is_not_there_says_so(
        browser_crawl: BrowserCrawl, tmp_path: Path, args: list[str], words: str,
        status: int) -> None:
    done = run_cli("--data-dir", str(browser_crawl.data_dir), "captures",
                   *[str(tmp_path / a) if a == "x.png" else a for a in args])
    assert done.returncode == status, done.stderr
    assert words in done.stderr
    assert not (tmp_path / "x.png").exists()


def test_help_says_how_to_get_the_screenshot() -> None:
    done = run_cli("captures", "--help")
    assert "--screenshot" in done.stdout and "--dom" in done.stdout
    assert "screenshot" in done.stdout and "rendered DOM" in done.stdout


def test_a_sessions_every_capture_marks_the_renderings_as_the_pages(
        browser_crawl: BrowserCrawl) -> None:
    lines = captures(browser_crawl, "--session", browser_crawl.session_id, "--requests").splitlines()
    shots = [line for line in lines if " screenshot " in line]
    doms = [line for line in lines if " dom " in line]
    assert len(shots) == len(doms) == 2
    assert all(line.endswith(f"{PAGE_URL}  (the page's screenshot)") for line in shots)
    assert all(line.endswith(f"{PAGE_URL}  (the page's rendered DOM)") for line in doms)
