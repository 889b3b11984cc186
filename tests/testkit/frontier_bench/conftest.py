"""The frontier tests' fixtures: a fresh crawl name on the session redis-server."""

from tests.frontier_service.frontier.conftest import crawl_name

__all__ = ["crawl_name"]
