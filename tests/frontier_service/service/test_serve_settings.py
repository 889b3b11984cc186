"""A crawl request's crawler settings: its crawl id, frontier folder and definition; and the
serve command's refusals of bad options and data dirs."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from archive_pipelines.catalog import CrawlRequest
from frontier_service.metrics import CrawlMetrics
from frontier_service.service.crawl_request_run import (
    BadCrawlRequest,
    earlier_attempts,
    progress_of,
    request_settings,
)
from frontier_service.service.crawler_settings import CrawlerSettings
from tests.frontier_service.service.cli_runs import cli
from tests.frontier_service.service.serve_runs import initialized

DEFINITION = {"name": "docs", "seeds": ["http://docs.test/", "http://www.docs.test/x"],
              "allowed_domains": [], "allowed_networks": ["127.0.0.1:8080"],
              "host_map": {"*.test": "127.0.0.1:8080"}, "max_depth": 2, "page_budget": 50,
              "max_pages": 300, "per_host_concurrency": None, "min_delay_seconds": 0.5,
              "cadence": "@weekly", "conditional": True}


def _request(definition: dict[str, Any], *, crawl_id: str = "docs-20260101T030000-7",
             attempts: int = 1, progress: dict[str, Any] | None = None) -> CrawlRequest:
    now = datetime.now(UTC)
    return CrawlRequest(id=7, crawl_id=crawl_id, definition_name="docs", definition=definition,
                        state="running", requested_by="test", queued_at=now, claimed_by="h:1",
                        heartbeat_at=now, started_at=now, finished_at=None, attempts=attempts,
                        progress=progress or {}, outcome=None)


@pytest.mark.unit
def test_a_request_runs_under_its_crawl_id_with_its_definition(tmp_path: Path) -> None:
    base = CrawlerSettings(data_dir=tmp_path, per_host_concurrency=3, crawl_name="other")
    settings, seeds = request_settings(base, _request(DEFINITION))
    assert seeds == ("http://docs.test/", "http://www.docs.test/x")
    assert settings.crawl_name == "docs-20260101T030000-7"
    assert settings.frontier_home == tmp_path / "crawls" / "docs-20260101T030000-7"
    assert settings.allowed_domains == ("docs.test", "www.docs.test")  # none named: the seeds'
    assert settings.allowed_networks == ("127.0.0.1:8080",)
    assert settings.host_map == (("*.test", "127.0.0.1:8080"),)
    assert (settings.max_depth, settings.domain_page_budget, settings.max_pages) == (2, 50, 300)
    assert settings.per_host_concurrency == 3  # None: [crawl]'s
    assert settings.min_delay_s == 0.5


@pytest.mark.unit
def test_a_request_carries_its_definitions_browser_modes(tmp_path: Path) -> None:
    base = CrawlerSettings(data_dir=tmp_path)
    definition = {**DEFINITION, "browser": "auto", "browser_by_domain": {"www.docs.test": "always"}}
    settings, _ = request_settings(base, _request(definition))
    assert settings.browser == "auto"
    assert settings.browser_by_domain == (("www.docs.test", "always"),)
    assert settings.uses_browser
    settings, _ = request_settings(base, _request(DEFINITION))  # queued before: never
    assert settings.browser == "never" and not settings.uses_browser


@pytest.mark.unit
@pytest.mark.parametrize(("change", "message"), [
    ({"seeds": []}, "seeds: at least one seed URL is needed"),
    ({"seeds": ["ftp://x.test/"]}, "seeds: 'ftp://x.test/' is not an http"),
    ({"max_depth": -1}, "max_depth: must be at least 0"),
    ({"browser": "sometimes"}, "browser: 'sometimes' is not one of never, auto, always"),
    ({"allowed_networks": ["not a network"]}, "allowed_networks"),
    ({"depth": 3}, "unknown key.s. depth"),
])
def test_a_request_whose_definition_cannot_run_says_why(
        tmp_path: Path, change: dict[str, Any], message: str) -> None:
    with pytest.raises(BadCrawlRequest, match=message):
        request_settings(CrawlerSettings(data_dir=tmp_path), _request({**DEFINITION, **change}))
    without_seeds = {k: v for k, v in DEFINITION.items() if k != "seeds"}
    with pytest.raises(BadCrawlRequest, match="missing seeds"):
        request_settings(CrawlerSettings(data_dir=tmp_path), _request(without_seeds))


@pytest.mark.unit
def test_a_crawl_id_that_cannot_name_a_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(BadCrawlRequest, match="cannot name a folder"):
        request_settings(CrawlerSettings(data_dir=tmp_path),
                         _request(DEFINITION, crawl_id="../escape"))


@pytest.mark.unit
def test_progress_adds_the_attempts_up() -> None:
    resumed = _request(DEFINITION, attempts=2, progress={"new_bodies": 10, "body_bytes": 900,
                                                        "pages": 12})
    before = earlier_attempts(resumed)
    assert before == {"new_bodies": 10, "body_bytes": 900, "unchanged": 0}
    progress = progress_of(counters={"pages_fetched": 30, "fetch_errors": 2, "urls_added": 40},
                           metrics=CrawlMetrics(new_blobs=5, body_bytes=100), before=before,
                           attempt=2, pid=123)
    assert progress == {"pages": 32, "pages_ok": 30, "errors": 2, "urls_queued": 40,
                        "new_bodies": 15, "body_bytes": 1000, "unchanged": 0, "attempt": 2,
                        "pid": 123}
    assert earlier_attempts(_request(DEFINITION, progress={"new_bodies": 3})) == {}


@pytest.mark.parametrize(("args", "message"), [
    (["--max-crawls", "0"], "--max-crawls must be at least 1"),
    (["--stale-after", "1", "--heartbeat-seconds", "2"], "--stale-after (1 s) must be longer"),
])
def test_serve_refuses_bad_options(tmp_path: Path, args: list[str], message: str) -> None:
    with initialized(tmp_path / "data"):
        pass
    done = cli("--data-dir", str(tmp_path / "data"), "serve", *args)
    assert done.returncode == 2
    assert message in done.stderr


def test_serve_refuses_a_data_dir_never_initialized(tmp_path: Path) -> None:
    data = tmp_path / "data"
    missing = cli("--data-dir", str(data), "serve")
    assert missing.returncode == 2
    assert f"there is no data dir at {data}" in missing.stderr
    assert not data.exists()
    data.mkdir()
    empty = cli("--data-dir", str(data), "serve")
    assert empty.returncode == 2
    assert f"{data} is not an initialized data dir" in empty.stderr
    assert list(data.iterdir()) == []
