"""The frontier tests' fixtures: a fresh crawl name on the session redis-server."""

from tests.frontier_service.conftest import crawl_name

__all__ = ["crawl_name"]
