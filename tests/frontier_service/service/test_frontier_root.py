"""Crawls with frontier roots of their own in one data dir: each has its own frontier files,
checkpoints and link journals, never sees the other's, and archives every page itself into
the shared sessions and blob store."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from archive_pipelines.archive_error import SettingsError
from frontier_service.archiving import iter_records
from frontier_service.frontier.checkpoint import checkpoint_dir
from frontier_service.frontier.frontier_files import walk
from frontier_service.service.crawler_settings import CrawlerSettings
from frontier_service.service.service import CrawlerService, RunReport
from tests.frontier_service.service.tree_site import HOST, TreeSite, serve_tree
from tests.frontier_service.service.web import crawler_settings
from tests.helpers.crawls import delete_keys

DEPTH = 3


@pytest.fixture(scope="module")
def site() -> Iterator[TreeSite]:
    with serve_tree(wide=3, deep=3) as served:
        yield served


@pytest.fixture
def names(redis_url: str) -> Iterator[tuple[str, str]]:
    pair = (f"root-a-{uuid.uuid4().hex[:8]}", f"root-b-{uuid.uuid4().hex[:8]}")
    yield pair
    for name in pair:
        delete_keys(redis_url, name)


def _settings(site: TreeSite, data: Path, redis_url: str, name: str) -> CrawlerSettings:
    return crawler_settings(data, redis_url, name, site.port, max_depth=DEPTH,
                            allowed_domains=(HOST,), host_map=((HOST, f"127.0.0.1:{site.port}"),),
                            min_delay_s=0.0, frontier_root=Path("crawls") / name)


def _pages(data: Path, report: RunReport) -> list[str]:
    return [record["page_url"] for folder in data.glob(f"sessions/*/{report.session_id}")
            for record in iter_records(folder) if record["requests"]]


def test_two_crawls_with_their_own_roots_each_archive_every_page(
        site: TreeSite, tmp_path: Path, redis_url: str, names: tuple[str, str]) -> None:
    data = tmp_path / "data"
    first, second = (_settings(site, data, redis_url, name) for name in names)
    seeds = (f"http://{HOST}/",)
    reports = [asyncio.run(CrawlerService(first, seeds=seeds).run())]
    before = {path: size for _, path, size in walk(first.frontier_home)}
    reports.append(asyncio.run(CrawlerService(second, seeds=seeds).run()))

    every = site.pages_to_depth(DEPTH)
    for settings, report in zip((first, second), reports, strict=True):
        pages = _pages(data, report)
        assert len(pages) == len(set(pages)) == every, settings.crawl_name
        assert report.metrics.redis_rebuilds == 0  # the other's files are not its state
        files = list(walk(settings.frontier_home))
        assert [domain for domain, _, _ in files] == [HOST]
        assert any(checkpoint_dir(settings.frontier_home, settings.crawl_name).iterdir())
        assert settings.frontier_home == data / "crawls" / settings.crawl_name
    # The second crawl wrote nothing into the first one's files, nor into the data dir's.
    assert {path: size for _, path, size in walk(first.frontier_home)} == before
    assert not list(walk(data))
    assert not (data / "frontiers" / "checkpoints").exists()


def test_a_frontier_root_outside_the_data_dir_is_refused(tmp_path: Path) -> None:
    base = CrawlerSettings(data_dir=tmp_path / "data")
    assert base.frontier_home == tmp_path / "data"
    with pytest.raises(SettingsError, match="`frontier_root` must lie inside the data dir"):
        base.with_changes(frontier_root=Path("../elsewhere"))
    with pytest.raises(SettingsError, match="`frontier_root` must lie inside the data dir"):
        base.with_changes(frontier_root=tmp_path / "elsewhere")
    inside = base.with_changes(frontier_root=tmp_path / "data" / "crawls" / "x")
    assert inside.frontier_home == tmp_path / "data" / "crawls" / "x"
