"""CrawlerSettings from archive.toml + env, then overrides."""

from __future__ import annotations

from pathlib import Path

import pytest

from archive_pipelines.archive_error import SettingsError
from archive_pipelines.settings import load_settings
from frontier_service.service.crawler_settings import from_settings

pytestmark = pytest.mark.unit


def test_crawl_section_and_redis_url_become_crawler_settings(data_dir: Path) -> None:
    (data_dir / "archive.toml").write_text(
        '[crawl]\nconcurrency = 7\nmin_delay_seconds = 0.5\nallowed_domains = ["*.test"]\n'
        'host_map = { "*.test" = "127.0.0.1:8080" }\nsegment_pages = 10\n')
    settings = load_settings(data_dir, environ={"REDIS_URL": "redis://127.0.0.1:1/0"})
    crawler = from_settings(settings)
    assert crawler.concurrency == 7 and crawler.min_delay_s == 0.5
    assert crawler.allowed_domains == ("*.test",)
    assert crawler.host_map == (("*.test", "127.0.0.1:8080"),)
    assert crawler.redis_url == "redis://127.0.0.1:1/0" and crawler.segment_pages == 10
    assert crawler.data_dir == data_dir.resolve()


def test_overrides_win_and_none_means_unchanged(data_dir: Path) -> None:
    crawler = from_settings(load_settings(data_dir, environ={}), concurrency=3, max_depth=None)
    assert crawler.concurrency == 3 and crawler.max_depth == 3 and crawler.embedded_redis


@pytest.mark.parametrize(("change", "message"), [
    ({"concurrency": 0}, "concurrency"),
    ({"min_delay_s": -1.0}, "min_delay_s"),
    ({"max_assets_per_page": -1}, "max_assets_per_page"),
    ({"event_loop": "trio"}, "event_loop"),
    ({"crawl_name": "two words"}, "crawl_name"),
    ({"no_such_setting": 1}, "no_such_setting"),
    ({"browser": "sometimes"}, "--browser / `browser` must be one of never, auto, always"),
    ({"browser_by_domain": (("a.test", "yes"),)}, "browser_by_domain` a.test: the mode"),
    ({"browser_by_domain": (("a b", "auto"),)}, "'a b' is not a host name or glob"),
    ({"browser_contexts": 0}, "browser_contexts` must be at least 1"),
    ({"browser_samples": -1}, "browser_samples` must not be negative"),
    ({"browser_page_timeout_s": 0.0}, "browser_page_timeout_s` must be positive"),
])
def test_bad_values_are_one_line_errors(data_dir: Path, change: dict[str, object],
                                        message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        from_settings(load_settings(data_dir, environ={}), **change)


def test_the_asset_budget_from_archive_toml_and_the_command_line(data_dir: Path) -> None:
    assert from_settings(load_settings(data_dir, environ={})).max_assets_per_page == 200
    (data_dir / "archive.toml").write_text("[crawl]\nmax_assets_per_page = 25\n")
    settings = load_settings(data_dir, environ={})
    assert from_settings(settings).max_assets_per_page == 25
    assert from_settings(settings, max_assets_per_page=0).max_assets_per_page == 0


def test_the_seen_capacity_from_archive_toml_and_the_command_line(data_dir: Path) -> None:
    assert from_settings(load_settings(data_dir, environ={})).seen_capacity == 20_000_000
    (data_dir / "archive.toml").write_text("[crawl]\nseen_capacity = 500000000\n")
    settings = load_settings(data_dir, environ={})
    assert from_settings(settings).seen_capacity == 500_000_000
    assert from_settings(settings, seen_capacity=3_000).seen_capacity == 3_000
    (data_dir / "archive.toml").write_text("[crawl]\nseen_capacity = 10\n")
    with pytest.raises(SettingsError, match="seen_capacity"):
        load_settings(data_dir, environ={})


def test_the_browser_is_off_unless_some_domain_asks_for_it(data_dir: Path) -> None:
    settings = from_settings(load_settings(data_dir, environ={}))
    assert settings.browser == "never" and not settings.uses_browser
    assert settings.browser_contexts == 2 and settings.browser_samples == 2
    assert from_settings(load_settings(data_dir, environ={}), browser="auto").uses_browser
    only_one = from_settings(load_settings(data_dir, environ={}),
                             browser_by_domain=(("app.test", "always"),))
    assert only_one.browser == "never" and only_one.uses_browser
