"""The crawler service: settings, startup, a TaskGroup of workers, graceful drain, health endpoint.

Pure asyncio on the frontier, fetch and archiving packages; Dagster is touched only to
report closed segments (`frontier_service.archiving.events`, imported lazily).
"""

from frontier_service.scope.crawl_scope import Scope
from frontier_service.service.crawler_settings import CrawlerSettings, from_settings
from frontier_service.service.runner import configure_logging, run_crawler
from frontier_service.service.service import CrawlerService, RunReport

__all__ = [
    "CrawlerService",
    "CrawlerSettings",
    "RunReport",
    "Scope",
    "configure_logging",
    "from_settings",
    "run_crawler",
]
