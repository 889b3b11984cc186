"""The capture tests' crawl fixtures live in `crawl_fixtures` (the root conftest loads them for
every package, so the one crawl is shared); the helpers are importable from here too."""

from tests.captures.crawl_fixtures import Crawled, capture_store, open_parts

__all__ = ["Crawled", "capture_store", "open_parts"]
